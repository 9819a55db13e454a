"""Requests section: the progress a client sees (next_progress, what CallClock sends), property-tested.  The clocks
end to end (timeouts, heartbeats, detached calls) are in test_relay.py."""
from hypothesis import given, strategies as st

import ocx_proxy as op


NUMBERS = st.one_of(st.integers(), st.integers(-10 ** 400, 10 ** 400), st.floats(allow_nan=True, allow_infinity=True),
                    st.floats(-1e12, 1e12), st.sampled_from([0, 1, 0.5, 1e300, -1e300, 1.7e308, 2 ** 53]))
EVENTS = st.lists(st.one_of(st.none(), NUMBERS, st.booleans(), st.text(max_size=3)), max_size=60)


@given(EVENTS)
def test_progress_the_client_sees_only_goes_up_heartbeats_and_the_servers_alike(events):
    """Each event is a heartbeat (None) or the server's progress value; what the client sees for the token,
    counted as CallClock counts it (the last countable value shown), strictly increases."""
    last, shown = None, []
    for value in events:
        sent = op.next_progress(last, value)
        if value is not None and op.progress_number(value) is None:
            assert sent is value     # not a number we can count above: passed as it is, and not counted
            continue
        assert op.progress_number(sent) is not None and (last is None or sent > last), (last, value, sent)
        if value is not None and (last is None or value > last):
            assert sent is value     # the server's own progress, when it goes up, passes unchanged
        if value is None and last is not None:
            assert sent - last <= max(0.002, abs(last) * 2e-9)   # a heartbeat: just above
        last = sent
        shown.append(sent)
    assert all(a < b for a, b in zip(shown, shown[1:]))


def test_a_heartbeat_first_says_0_then_steps_of_a_thousandth():
    assert [op.next_progress(None), op.next_progress(0), op.next_progress(3), op.next_progress(5, 5),
            op.next_progress(5, 4.5), op.next_progress(5, 6)] == [0, 0.001, 3.001, 5.001, 5.001, 6]
    assert op.next_progress(1e20) > 1e20 and op.next_progress(-2) == -1.999
