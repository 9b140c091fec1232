using System.Diagnostics;
using System.Globalization;
using System.Text.RegularExpressions;

namespace Queue.Bench.Harness;

/// <summary>What one <c>wrk --latency</c> run measured.</summary>
public sealed record WrkResult(double RequestsPerSecond, double P50Ms, double P99Ms, long Requests, long Non2xx, long SocketErrors, string Output);

/// <summary>
/// Drives loopback load with Debian's <c>wrk</c> (C, epoll), which costs the 2-core box far less CPU per request than an
/// in-process HttpClient loop, so more of the machine is left to the service being measured.
/// </summary>
public static partial class Wrk
{
    public static async Task<WrkResult> RunAsync(string baseUrl, string luaScript, int connections, int threads, TimeSpan duration)
    {
        var script = Path.Combine(Path.GetTempPath(), $"queue-bench-{Guid.NewGuid():N}.lua");
        await File.WriteAllTextAsync(script, luaScript);
        try
        {
            var psi = new ProcessStartInfo("wrk") { RedirectStandardOutput = true, RedirectStandardError = true, UseShellExecute = false };
            foreach (var a in new[]
            {
                "-t", threads.ToString(CultureInfo.InvariantCulture), "-c", connections.ToString(CultureInfo.InvariantCulture),
                "-d", ((int)duration.TotalSeconds).ToString(CultureInfo.InvariantCulture) + "s", "--latency", "--timeout", "10s", "-s", script, baseUrl,
            })
            {
                psi.ArgumentList.Add(a);
            }
            using var p = Process.Start(psi)!;
            var stdout = p.StandardOutput.ReadToEndAsync();
            var stderr = p.StandardError.ReadToEndAsync();
            await p.WaitForExitAsync();
            var output = await stdout + await stderr;
            if (p.ExitCode != 0)
            {
                throw new InvalidOperationException("wrk failed: " + output);
            }
            return Parse(output);
        }
        finally
        {
            File.Delete(script);
        }
    }

    public static WrkResult Parse(string output)
    {
        var rps = double.Parse(RequestsPerSecond().Match(output).Groups[1].Value, CultureInfo.InvariantCulture);
        var requests = long.Parse(Requests().Match(output).Groups[1].Value, CultureInfo.InvariantCulture);
        var non2xx = Non2xx().Match(output) is { Success: true } m ? long.Parse(m.Groups[1].Value, CultureInfo.InvariantCulture) : 0;
        var errors = SocketErrors().Match(output) is { Success: true } e
            ? e.Groups.Values.Skip(1).Sum(g => long.Parse(g.Value, CultureInfo.InvariantCulture))
            : 0;
        return new WrkResult(rps, Percentile(output, "50"), Percentile(output, "99"), requests, non2xx, errors, output);
    }

    private static double Percentile(string output, string p)
    {
        var m = Regex.Match(output, @"^\s+" + p + @"(?:\.000)?%\s+([\d.]+)(us|ms|s)\s*$", RegexOptions.Multiline);
        var v = double.Parse(m.Groups[1].Value, CultureInfo.InvariantCulture);
        return m.Groups[2].Value switch { "us" => v / 1000, "s" => v * 1000, _ => v };
    }

    [GeneratedRegex(@"Requests/sec:\s+([\d.]+)")]
    private static partial Regex RequestsPerSecond();

    [GeneratedRegex(@"(\d+) requests in")]
    private static partial Regex Requests();

    [GeneratedRegex(@"Non-2xx or 3xx responses: (\d+)")]
    private static partial Regex Non2xx();

    [GeneratedRegex(@"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)")]
    private static partial Regex SocketErrors();
}
