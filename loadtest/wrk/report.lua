-- Shared by the wrk cross-check scripts: keeps every thread, and prints the one line
-- loadtest/wrk-check reads.
--
-- A script that counts replies itself (it defines response()) keeps, in each thread, the
-- globals ok (2xx), non2xx and messages (messages moved by the 2xx replies), and may keep
-- more counters, named in extra. A script without response() leaves wrk at full speed; its
-- non-2xx replies are wrk's summary.errors.status (status 400 and up; Wharf and the ceiling
-- send no 1xx or 3xx), and its messages are ok × BATCH.
report = {}
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

local function sum(name)
  local total = 0
  for _, thread in ipairs(threads) do total = total + (thread:get(name) or 0) end
  return total
end

-- Prints "wrk-check: key=value ..." from the summary and the threads' counters.
function report.done(summary, counted_by_script, batch, extra)
  local ok, non2xx, messages
  if counted_by_script then
    ok, non2xx, messages = sum("ok"), sum("non2xx"), sum("messages")
  else
    non2xx = summary.errors.status
    ok = summary.requests - non2xx
    messages = ok * batch
  end
  local line = string.format(
    "wrk-check: requests=%d ok=%d non2xx=%d messages=%d duration_s=%.3f connect_errors=%d read_errors=%d write_errors=%d timeouts=%d",
    summary.requests, ok, non2xx, messages, summary.duration / 1e6, summary.errors.connect,
    summary.errors.read, summary.errors.write, summary.errors.timeout)
  for _, name in ipairs(extra or {}) do
    line = line .. string.format(" %s=%d", name, sum(name))
  end
  io.write(line .. "\n")
end
