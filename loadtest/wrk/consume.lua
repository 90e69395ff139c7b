-- consume under wrk: each connection alternates receive (max_messages $MAX_MESSAGES, wait_ms 0)
-- and ack. response() takes the receipts out of a receive's reply and queues their ack body;
-- the thread's next request() sends it, else a receive. Messages count when an ack's reply
-- says they were acked, so msg/s is acked messages per second. A thread stops once
-- $EMPTY_LIMIT receives in a row came back empty (the backlog is drained), so an empty
-- backlog does not dilute the rate; the summary's duration ends with the last thread.
--
-- The URL is the server's; $TOPIC and $SUB name the subscription.
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(here .. "report.lua")

local sub_path = "/v1/topics/" .. assert(os.getenv("TOPIC"), "TOPIC") .. "/subscriptions/"
  .. assert(os.getenv("SUB"), "SUB")
local receive_path = sub_path .. "/receive"
local ack_path = sub_path .. "/ack"
local receive_body = string.format('{"max_messages":%d,"wait_ms":0}',
  tonumber(os.getenv("MAX_MESSAGES") or "100"))
local empty_limit = tonumber(os.getenv("EMPTY_LIMIT") or "20")
wrk.headers["Content-Type"] = "application/json"

-- How a receipt starts in a receive's reply: Wharf and the ceiling write compact JSON.
RECEIPT_KEY = '"receipt":"'
local pending_acks = {}

function init(args)
  ok, non2xx, messages = 0, 0, 0
  receives, received, empty, empty_in_a_row = 0, 0, 0, 0
  acks, ack_failures = 0, 0
end

function request()
  local ack = table.remove(pending_acks, 1)
  if ack then
    return wrk.format("POST", ack_path, nil, ack)
  end
  return wrk.format("POST", receive_path, nil, receive_body)
end

function response(status, headers, body)
  if status < 200 or status > 299 then
    non2xx = non2xx + 1
    return
  end
  ok = ok + 1
  local acked = body:match('^%s*{%s*"acked"%s*:%s*(%d+)')
  if acked then
    acks = acks + 1
    messages = messages + tonumber(acked)
    if not body:find('"failed"%s*:%s*%[%s*%]') then ack_failures = ack_failures + 1 end
    return
  end
  receives = receives + 1
  local receipts = {}
  local at = 1
  while true do
    -- Plain finds: a pattern scan of every reply's 100 KiB costs wrk more than the server.
    local _, opening = body:find(RECEIPT_KEY, at, true)
    if not opening then break end
    local closing = body:find('"', opening + 1, true)
    if not closing then break end
    receipts[#receipts + 1] = body:sub(opening, closing)
    at = closing + 1
  end
  if #receipts == 0 then
    empty = empty + 1
    empty_in_a_row = empty_in_a_row + 1
    if empty_in_a_row >= empty_limit then wrk.thread:stop() end
    return
  end
  empty_in_a_row = 0
  received = received + #receipts
  table.insert(pending_acks, '{"receipts":[' .. table.concat(receipts, ",") .. ']}')
end

function done(summary, latency, requests)
  report.done(summary, true, 0, { "receives", "received", "empty", "acks", "ack_failures" })
end
