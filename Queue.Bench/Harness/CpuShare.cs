using System.Diagnostics;
using System.Globalization;

namespace Queue.Bench.Harness;

/// <summary>
/// CPU time spent by the Api, mariadbd and this load generator over a phase, per item. On a noisy 2-core box, CPU per
/// item moves far less between sittings than throughput does, so it is the figure a change is judged by first.
/// </summary>
internal sealed record CpuShare(TimeSpan Api, TimeSpan Db, TimeSpan Load, double WallSeconds, long Items)
{
    private const double TicksPerSecond = 100; // USER_HZ: utime and stime in /proc/PID/stat count in 1/100 s

    public static CpuShare Read(int apiPid, int dbPid) =>
        new(Of(apiPid), Of(dbPid), Process.GetCurrentProcess().TotalProcessorTime, Stopwatch.GetTimestamp() / (double)Stopwatch.Frequency, 0);

    public CpuShare Since(CpuShare before, long items) =>
        new(Api - before.Api, Db - before.Db, Load - before.Load, WallSeconds - before.WallSeconds, items);

    public override string ToString()
    {
        double Us(TimeSpan t) => Items == 0 ? 0 : t.TotalMicroseconds / Items;
        double Cores(TimeSpan t) => WallSeconds <= 0 ? 0 : t.TotalSeconds / WallSeconds;
        return string.Create(CultureInfo.InvariantCulture,
            $"Queue.Api {Us(Api),6:F0} us ({Cores(Api):F2} cores)   mariadbd {Us(Db),6:F0} us ({Cores(Db):F2})   load {Us(Load),5:F0} us ({Cores(Load):F2})   total {Us(Api + Db + Load),6:F0} us");
    }

    /// <summary>utime + stime of a process (all its threads), from /proc.</summary>
    private static TimeSpan Of(int pid)
    {
        var stat = File.ReadAllText($"/proc/{pid}/stat");
        // The command name (field 2) may hold spaces; the fields after its closing parenthesis are space-separated.
        var fields = stat[(stat.LastIndexOf(')') + 2)..].Split(' ');
        var ticks = long.Parse(fields[11], CultureInfo.InvariantCulture) + long.Parse(fields[12], CultureInfo.InvariantCulture);
        return TimeSpan.FromSeconds(ticks / TicksPerSecond);
    }
}
