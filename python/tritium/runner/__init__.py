"""The runner: the Python side of Tritium's execution.

`python -m tritium.runner --channel-fd 3` is started by the C++ engine (cpp/src/exec). It imports
torch once, then forks a worker per request, so a task that crashes, hangs, exits or corrupts the
interpreter costs only that request. Requests and answers are length-prefixed JSON frames on a
dedicated socket (protocol.py); whatever a task prints goes to a file whose tail is returned.
"""
