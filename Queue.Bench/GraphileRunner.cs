using System.Diagnostics;
using System.Globalization;
using System.Text.Json;
using Queue.Bench.Harness;

namespace Queue.Bench;

/// <summary>
/// One <c>RESULT {json}</c> line of a peer script: a phase, its jobs/s, and (bench/peers' runner only) the CPU per job of
/// the peer's node process and of its PostgreSQL.
/// </summary>
internal sealed record PeerResult(string Phase, int? Workers, double JobsPerSecond, bool Capped, double? RssMib)
{
    public double? CpuNodeUs { get; init; }

    public double? CpuPostgresUs { get; init; }
}

/// <summary>
/// Runs the repository's own bench/peers/run-graphile-worker.sh (or <c>--peers-dir</c>'s copy, such as ../shared/peers,
/// the outside check of it) with the same knobs as Queue's run and collects its RESULT lines. It runs after Queue's
/// services are stopped, so the two never share the two cores.
/// </summary>
internal static class GraphileRunner
{
    private const string Script = "run-graphile-worker.sh";

    /// <param name="disk">Cut at each phase's result, so each of the peer's phases is printed with the disk's flushes since the one before.</param>
    public static async Task<List<PeerResult>> RunAsync(long jobs, IReadOnlyList<int> workers, int drainMaxS, int enqMaxS, string? peersDir, DiskProbe disk)
    {
        var dir = peersDir ?? FindPeersDir() ?? throw new InvalidOperationException(
            $"{Script} not found in bench/peers above the current or the program's folder: pass --peers-dir DIR or --no-peer");
        await EnsurePostgresAsync();
        var psi = new ProcessStartInfo("bash") { RedirectStandardOutput = true, RedirectStandardError = true, UseShellExecute = false, WorkingDirectory = dir };
        psi.ArgumentList.Add(Path.Combine(dir, Script));
        psi.Environment["JOBS"] = jobs.ToString(CultureInfo.InvariantCulture);
        psi.Environment["WORKERS"] = string.Join(',', workers);
        psi.Environment["DRAIN_MAX_S"] = drainMaxS.ToString(CultureInfo.InvariantCulture);
        psi.Environment["ENQ_MAX_S"] = enqMaxS.ToString(CultureInfo.InvariantCulture);
        Console.WriteLine($"graphile-worker: {psi.ArgumentList[0]} JOBS={psi.Environment["JOBS"]} WORKERS={psi.Environment["WORKERS"]} DRAIN_MAX_S={drainMaxS} ENQ_MAX_S={enqMaxS}");

        var results = new List<PeerResult>();
        using var p = Process.Start(psi) ?? throw new InvalidOperationException("could not start bash");
        p.OutputDataReceived += (_, e) =>
        {
            if (e.Data is not { } line)
            {
                return;
            }
            Console.WriteLine("  [graphile] " + line);
            if (line.StartsWith("RESULT ", StringComparison.Ordinal) && Parse(line["RESULT ".Length..]) is { } r)
            {
                lock (results)
                {
                    results.Add(r);
                }
                Console.WriteLine("  " + DiskProbe.Line($"up to graphile-worker's {r.Phase}{(r.Workers is { } w ? $"-{w}" : "")} result, since the one before", disk.Cut()));
            }
        };
        p.ErrorDataReceived += (_, e) =>
        {
            if (e.Data is not null)
            {
                Console.WriteLine("  [graphile:err] " + e.Data);
            }
        };
        p.BeginOutputReadLine();
        p.BeginErrorReadLine();
        // The script caps node at 1,800 s itself; this cap only catches a hang outside it (npm, initdb).
        using var cap = new CancellationTokenSource(TimeSpan.FromMinutes(40));
        try
        {
            await p.WaitForExitAsync(cap.Token);
        }
        catch (OperationCanceledException)
        {
            p.Kill(entireProcessTree: true);
            Console.WriteLine("graphile-worker: killed after 40 min; a PostgreSQL under /tmp/peers-pg.* may be left running");
        }
        if (p.HasExited && p.ExitCode != 0)
        {
            Console.WriteLine($"graphile-worker: the script exited with {p.ExitCode}");
        }
        lock (results)
        {
            return [.. results];
        }
    }

    private static PeerResult? Parse(string json)
    {
        try
        {
            using var doc = JsonDocument.Parse(json);
            var root = doc.RootElement;
            double? Number(string name) => root.TryGetProperty(name, out var v) && v.ValueKind == JsonValueKind.Number ? v.GetDouble() : null;
            return new PeerResult(
                root.GetProperty("phase").GetString() ?? "",
                root.TryGetProperty("workers", out var w) ? w.GetInt32() : null,
                root.GetProperty("jobs_per_s").GetDouble(),
                root.TryGetProperty("capped", out var c) && c.ValueKind == JsonValueKind.True,
                Number("rss_mib"))
            {
                CpuNodeUs = Number("cpu_node_us_per_job"),
                CpuPostgresUs = Number("cpu_postgres_us_per_job"),
            };
        }
        catch (Exception e) when (e is JsonException or KeyNotFoundException or InvalidOperationException)
        {
            Console.WriteLine($"graphile-worker: unreadable RESULT line ({e.Message})");
            return null;
        }
    }

    /// <summary>The repository's bench/peers: look upwards from where we run and from the binary.</summary>
    private static string? FindPeersDir()
    {
        foreach (var start in new[] { Directory.GetCurrentDirectory(), AppContext.BaseDirectory })
        {
            for (var d = new DirectoryInfo(start); d is not null; d = d.Parent)
            {
                var candidate = Path.Combine(d.FullName, "bench", "peers");
                if (File.Exists(Path.Combine(candidate, Script)))
                {
                    return candidate;
                }
            }
        }
        return null;
    }

    /// <summary>The script needs Debian's postgresql binaries (not its service): install them when pg_ctl is missing.</summary>
    private static async Task EnsurePostgresAsync()
    {
        var root = "/usr/lib/postgresql";
        if (Directory.Exists(root) && Directory.EnumerateDirectories(root).Any(v => File.Exists(Path.Combine(v, "bin", "pg_ctl"))))
        {
            return;
        }
        Console.WriteLine("graphile-worker: pg_ctl missing, installing the Debian package postgresql (apt-get)");
        var psi = new ProcessStartInfo("/bin/sh") { UseShellExecute = false };
        psi.ArgumentList.Add("-c");
        psi.ArgumentList.Add("""S=; [ "$(id -u)" -ne 0 ] && S=sudo; export DEBIAN_FRONTEND=noninteractive; $S apt-get update -qq && $S apt-get install -y -qq --no-install-recommends postgresql""");
        using var p = Process.Start(psi) ?? throw new InvalidOperationException("could not start /bin/sh");
        using var cap = new CancellationTokenSource(TimeSpan.FromMinutes(10));
        await p.WaitForExitAsync(cap.Token);
        if (p.ExitCode != 0)
        {
            throw new InvalidOperationException($"apt-get install postgresql exited with {p.ExitCode}");
        }
    }
}
