-- wrk's done() hook → one JSON object, read by harness/lab/load/wrk.py: wrk's totals, its five error counters and
-- its latency histogram (whole µs) as statistics and percentiles. The file is named by LAB_WRK_SUMMARY: done() runs
-- in wrk's main Lua state, which never sees the script's arguments (only each thread's init() does).
-- wrk (4.1.0) fills the histogram with one value per response under --timeout, and before done() adds values for
-- the requests a slow response held back (its stats_correct, "coordinated omission"): percentiles include them.

local PERCENTILES = {}
for p = 1, 99 do PERCENTILES[#PERCENTILES + 1] = p end
for _, p in ipairs({ 99.5, 99.9, 99.99, 100 }) do PERCENTILES[#PERCENTILES + 1] = p end

local function whole(x)
   return string.format("%.0f", x)
end

function done(summary, latency, requests)
   local path = os.getenv("LAB_WRK_SUMMARY")
   if not path or path == "" then
      io.stderr:write("wrk_summary.lua: LAB_WRK_SUMMARY is not set: no summary written\n")
      return
   end
   local e = summary.errors
   local parts = {
      string.format('"duration_us": %s, "requests": %s, "bytes": %s', whole(summary.duration),
                    whole(summary.requests), whole(summary.bytes)),
      string.format('"errors": {"connect": %s, "read": %s, "write": %s, "status": %s, "timeout": %s}',
                    whole(e.connect), whole(e.read), whole(e.write), whole(e.status), whole(e.timeout)),
   }
   if latency.min > latency.max then -- no response under --timeout: wrk's histogram is empty (min stays at 2^64)
      parts[#parts + 1] = '"latency_us": null'
   else
      local values = {}
      for _, p in ipairs(PERCENTILES) do -- wrk's percentile(100) ranks count + 1, past the last value: it gives 0
         local value = p < 100 and latency:percentile(p) or latency.max
         values[#values + 1] = string.format('"%g": %s', p, whole(value))
      end
      parts[#parts + 1] = string.format(
         '"latency_us": {"min": %s, "max": %s, "mean": %.3f, "stdev": %.3f, "percentiles": {%s}}',
         whole(latency.min), whole(latency.max), latency.mean, latency.stdev, table.concat(values, ", "))
   end
   local file = assert(io.open(path, "w"))
   file:write("{", table.concat(parts, ", "), "}\n")
   file:close()
end
