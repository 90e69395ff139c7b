-- wrk script for producers.sh: posts the JSON batch in $BATCH, counts statuses per thread
-- and whether each 503 carries Retry-After.
local f = assert(io.open(os.getenv("BATCH"), "rb"))
wrk.body = f:read("*all")
f:close()
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) ok = 0; refused = 0; other = 0; retry_after = 0 end
function response(status, headers, body)
  if status == 200 then ok = ok + 1
  elseif status == 503 then
    refused = refused + 1
    if headers["retry-after"] or headers["Retry-After"] then retry_after = retry_after + 1 end
  else other = other + 1 end
end
function done(summary, latency, requests)
  local a, b, c, r = 0, 0, 0, 0
  for _, t in ipairs(threads) do
    a = a + t:get("ok"); b = b + t:get("refused"); c = c + t:get("other"); r = r + t:get("retry_after")
  end
  io.write(string.format("200: %d  503: %d (with Retry-After: %d)  other: %d\n", a, b, r, c))
  io.write(string.format("latency of answered requests: p50 %.1f ms, p99 %.1f ms\n",
    latency:percentile(50) / 1000, latency:percentile(99) / 1000))
  io.write(string.format("socket errors: connect %d, read (resets) %d, write %d, timeout %d\n",
    summary.errors.connect, summary.errors.read, summary.errors.write, summary.errors.timeout))
end
