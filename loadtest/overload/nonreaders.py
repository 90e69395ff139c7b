"""loadtest/overload/nonreaders.py URL PID [HOLD_S]: the issue's second reproduction (the QMQ
incident in shared/seeds/). 40 messages of 1 MB on a topic `big` with 50 subscriptions; 50
clients each send one receive (max_messages 1000, wait_ms 0) on their own subscription over
a raw socket with a 4 KiB receive buffer, and never read the answer. Prints the server's RSS
(PID) every 2 s for HOLD_S seconds (default 40), what each socket was answered, then has a
reading consumer take every subscription's 40 messages. Loopback only; every loop bounded."""
import json, os, socket, sys, time, urllib.request

BASE = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8080"
PID = int(sys.argv[2])
HOLD = float(sys.argv[3]) if len(sys.argv) > 3 else 40
host, port = BASE.split("//")[1].split(":")

def rss():
    s = open(f"/proc/{PID}/status").read()
    get = lambda k: int([l for l in s.splitlines() if l.startswith(k)][0].split()[1]) / 1024
    return get("VmRSS:"), get("VmHWM:")

def call(method, path, body=None, ctype="application/json"):
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    req = urllib.request.Request(BASE + path, data=data, method=method, headers={"content-type": ctype})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()

print("create", call("POST", "/v1/topics", {"name": "big", "partitions": 1})[0])
for i in range(50):
    call("POST", "/v1/topics/big/subscriptions", {"name": f"s{i}", "start": "earliest"})
for i in range(40):
    st, _ = call("POST", "/v1/topics/big/messages", os.urandom(1_000_000), "application/octet-stream")
    assert st == 200, st
print("idle RSS %.1f MiB (HWM %.1f)" % rss())
socks = []
body = json.dumps({"max_messages": 1000, "wait_ms": 0}).encode()
t0 = time.time()
for i in range(50):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect((host, int(port)))
    s.sendall(f"POST /v1/topics/big/subscriptions/s{i}/receive HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n".encode() + body)
    socks.append(s)
peak = 0
while time.time() - t0 < HOLD:
    r, h = rss(); peak = max(peak, h)
    print("t=%5.1fs RSS %.1f MiB HWM %.1f MiB" % (time.time() - t0, r, h), flush=True)
    time.sleep(2)
# what each socket got (without reading more than the status line)
statuses = {}
for s in socks:
    s.setblocking(False)
    try:
        head = s.recv(64)
        st = head.split(b" ")[1].decode() if head else "closed"
    except BlockingIOError:
        st = "nothing"
    except ConnectionResetError:
        st = "reset"
    statuses[st] = statuses.get(st, 0) + 1
print("first bytes seen per socket:", statuses)
print("RSS now %.1f MiB, peak %.1f MiB" % rss())
for s in socks: s.close()
# others get the messages afterwards
got = 0; deadline = time.time() + 90
for i in range(50):
    seen = set()
    while len(seen) < 40 and time.time() < deadline:
        st, out = call("POST", f"/v1/topics/big/subscriptions/s{i}/receive", {"max_messages": 10, "wait_ms": 5000})
        if st != 200: print("receive", st, out[:200]); time.sleep(1); continue
        msgs = json.loads(out)["messages"]
        for m in msgs: seen.add(m["offset"])
        if msgs:
            call("POST", f"/v1/topics/big/subscriptions/s{i}/ack", {"receipts": [m["receipt"] for m in msgs]})
    got += len(seen)
print("delivered afterwards: %d of %d" % (got, 50 * 40), "in %.1f s" % (time.time() - t0))
print("final RSS %.1f MiB, peak %.1f MiB" % rss())
