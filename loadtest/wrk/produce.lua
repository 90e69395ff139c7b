-- produce-1 and produce-batch under wrk: POSTs the JSON body in the file $BODY (made by
-- `wharf-load produce-body`, the body wharf-load sends) to the URL's path, which is a topic's
-- /messages; $BATCH is the messages in that body. No response(): wrk stays at full speed and
-- counts non-2xx replies itself.
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(here .. "report.lua")

local file = assert(io.open(assert(os.getenv("BODY"), "BODY: the JSON body file"), "rb"))
wrk.method = "POST"
wrk.body = file:read("*all")
file:close()
wrk.headers["Content-Type"] = "application/json"
local batch = tonumber(os.getenv("BATCH") or "1")

function done(summary, latency, requests)
  report.done(summary, false, batch)
end
