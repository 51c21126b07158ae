-- wrk script of scripts/load-outside.sh: GETs the merchant-token notification URL with a new event id each time,
-- as anyone on the internet may (the notification is unauthenticated). Prints one JSON line from done().
local counter = 0
function setup(thread)
  thread:set("prefix", tostring(math.random(1, 1e9)))
end
function request()
  counter = counter + 1
  return wrk.format("GET", "/apple-pay/notification/merchantToken/flood-" .. prefix .. "-" .. counter)
end
done = function(summary, latency, _)
  local statuses = summary.errors.status
  io.write(string.format(
    '{"scenario":"notificationFlood","requests":%d,"requestsPerSecond":%.0f,"latencyMs":{"p50":%.2f,"p99":%.2f,' ..
    '"max":%.2f},"non2xx":%d,"timeouts":%d,"connectErrors":%d}\n',
    summary.requests, summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000,
    latency:percentile(99) / 1000, latency.max / 1000, statuses, summary.errors.timeout, summary.errors.connect))
end
