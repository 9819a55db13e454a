"""tools_server, except that it outlives its stdin: at EOF it writes its pid to --pid FILE and waits.

    python3 eof_server.py --pid FILE [--record FILE]

A client (or relay) that stops its servers only by closing their stdin leaves this one behind;
the real-client tier checks that no such orphan is left once the CLI exits.
"""
import os
import sys
import time

import tools_server


def main():
    pid_file = sys.argv[sys.argv.index("--pid") + 1]
    with open(pid_file, "w") as out:
        out.write(str(os.getpid()))
    tools_server.main()
    while True:     # stdin is closed: ignore it, as a careless server does
        time.sleep(1)


if __name__ == "__main__":
    main()
