-- wrk script of scripts/load-test.sh and scripts/soak-test.sh: posts the requests of a file of `path<TAB>body`
-- lines (BODIES), or `path<TAB>body<TAB>secret` for a checkout's routes (the secret goes in its Checkout-Secret
-- header; a compact JSON body holds no tab). Thread k of THREADS takes lines k, k + THREADS, k + 2*THREADS, ... as its partition (with
-- SPLIT=1, the whole of BODIES.<k>, where the calling script has put that partition: less to read at start-up).
--   MODE=cycle  each thread cycles through its partition until wrk's --duration is up (checkouts, sheet updates)
--   MODE=once   each line is posted exactly once: a thread's connections take its lines one at a time (delay()
--               hands each next line to one connection, and holds a connection with none left until the thread
--               stops), the thread writes "status<TAB>body" per answer to ANSWERS.<k> in the order the answers came
--               (client.py matches them to their lines by content), stops itself with wrk.thread:stop() after its
--               last answer, and writes its wrk process id to DONE_DIR/<k>; the calling script ends wrk with SIGINT
--               once every thread has done so (wrk otherwise sleeps until --duration). Many connections on few
--               threads: wrk's own cost stays that of a couple of event loops (a thread per connection took 0.6 of
--               the two cores at 1,000 connections). Requests/s are measured here, from the first request to the
--               last answer.
-- Without BODIES, each thread GETs the URL's path. Prints one JSON line (SCENARIO, CONNECTIONS from the environment) from done().
local ffi = require("ffi")
ffi.cdef [[
  typedef struct { long tv_sec; long tv_nsec; } applepay_timespec;
  int clock_gettime(int clock, applepay_timespec *t);
]]
local function now()
  local t = ffi.new("applepay_timespec")
  ffi.C.clock_gettime(1, t) -- CLOCK_MONOTONIC: the same clock in every thread
  return tonumber(t.tv_sec) + tonumber(t.tv_nsec) / 1e9
end

local threads = {}
local next_id = 0
function setup(thread)
  thread:set("id", next_id)
  next_id = next_id + 1
  table.insert(threads, thread)
end

local paths, requests = {}, {}
local sent, answered = 0, 0
local once = os.getenv("MODE") == "once"
local out

function init(args)
  local count = tonumber(os.getenv("THREADS"))
  local file = os.getenv("BODIES") or ""
  if file == "" then -- no bodies: GET the URL's path (products)
    requests[1] = wrk.format("GET")
    return
  end
  local share = id
  if os.getenv("SPLIT") == "1" then -- the calling script has written each thread's share to BODIES.<k>
    file, count, share = file .. "." .. id, 1, 0
  end
  local line_number = 0
  for line in io.lines(file) do
    if line_number % count == share then
      local tab = line:find("\t", 1, true)
      local path, body = line:sub(1, tab - 1), line:sub(tab + 1)
      local headers = { ["Content-Type"] = "application/json" }
      local second = body:find("\t", 1, true)
      if second then
        body, headers["Checkout-Secret"] = body:sub(1, second - 1), body:sub(second + 1)
      end
      paths[#paths + 1] = path
      requests[#requests + 1] = wrk.format("POST", path, headers, body)
    end
    line_number = line_number + 1
  end
  if once then
    out = io.open(os.getenv("ANSWERS") .. "." .. id, "w")
  end
end

-- MODE=once: wrk calls delay() before each request of a connection, then request() for it once the delay is over.
-- delay() reserves the thread's next line for the connection (no wait), or holds a connection when every line is
-- taken (an hour: the thread stops first, after its last answer). request() hands out the reserved lines in order;
-- the one call without a reservation is wrk's check of the script on thread 0 before the threads start, which
-- sends nothing. A request lost to a broken connection is not sent again (wrk counts the error): its thread never
-- sees its last answer, wrk runs to --duration, and the checks name the checkout that got no answer.
local reserved, handed = 0, 0
if once then
  function delay()
    if reserved < #requests then
      reserved = reserved + 1
      return 0
    end
    return 3600000
  end
end

function request()
  if once then
    if handed >= reserved then -- wrk's check of the script: not sent
      return requests[1] or wrk.format("GET", "/healthz")
    end
    handed = handed + 1
    if handed == 1 then
      first = now()
    end
    return requests[handed]
  end
  sent = sent + 1
  if sent <= 2 then
    first = now()
  end
  return requests[(sent - 1) % #requests + 1]
end

local function finish()
  last = now()
  out:close()
  local f = io.open("/proc/self/stat") -- the process (not thread) id comes first
  local pid = f:read("*n")
  f:close()
  local marker = io.open(os.getenv("DONE_DIR") .. "/" .. id, "w")
  marker:write(pid, "\n")
  marker:close()
  wrk.thread:stop()
end

function response(status, headers, body)
  answered = answered + 1
  last = now()
  if once then
    out:write(status, "\t", (body:gsub("\n", " ")), "\n")
    if answered == #requests then
      finish()
    end
  end
end

done = function(summary, latency, _)
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write
      + summary.errors.status + summary.errors.timeout
  local seconds = summary.duration / 1e6
  if once then
    local from, to = math.huge, 0
    for _, thread in ipairs(threads) do
      local a, b = thread:get("first"), thread:get("last")
      if a and a < from then from = a end
      if b and b > to then to = b end
    end
    if to > from then seconds = to - from end
  end
  io.write(string.format(
    '{"scenario":"%s","connections":%s,"seconds":%.2f,"requests":%d,"requestsPerSecond":%.0f,' ..
    '"latencyMs":{"p50":%.2f,"p99":%.2f,"max":%.2f},"errors":%d,"non2xx":%d,"timeouts":%d}\n',
    os.getenv("SCENARIO"), os.getenv("CONNECTIONS"), seconds, summary.requests, summary.requests / seconds,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000, errors,
    summary.errors.status, summary.errors.timeout))
end
