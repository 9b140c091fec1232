using System.Diagnostics;
using System.Globalization;

namespace Queue.Bench.Harness;

/// <summary>
/// CPU time spent by the Api, mariadbd and this load generator over a phase, per item. On a noisy 2-core box, CPU per
/// item moves far less between sittings than throughput does, so it is the figure a change is judged by first.
/// <paramref name="Machine"/> is every core's busy time (/proc/stat), so that the cores left idle show: a phase whose
/// processes use 1.6 of 2 cores waits on something other than CPU for the rest.
/// </summary>
internal sealed record CpuShare(TimeSpan Api, TimeSpan Db, TimeSpan Load, TimeSpan Machine, double WallSeconds, long Items)
{
    private const double TicksPerSecond = 100; // USER_HZ: utime and stime in /proc/PID/stat count in 1/100 s

    public static CpuShare Read(int apiPid, int dbPid) =>
        new(Of(apiPid), Of(dbPid), Process.GetCurrentProcess().TotalProcessorTime, MachineBusy(), Stopwatch.GetTimestamp() / (double)Stopwatch.Frequency, 0);

    public CpuShare Since(CpuShare before, long items) =>
        new(Api - before.Api, Db - before.Db, Load - before.Load, Machine - before.Machine, WallSeconds - before.WallSeconds, items);

    public override string ToString()
    {
        double Us(TimeSpan t) => Items == 0 ? 0 : t.TotalMicroseconds / Items;
        double Cores(TimeSpan t) => WallSeconds <= 0 ? 0 : t.TotalSeconds / WallSeconds;
        return string.Create(CultureInfo.InvariantCulture,
            $"Queue.Api {Us(Api),6:F0} us ({Cores(Api):F2} cores)   mariadbd {Us(Db),6:F0} us ({Cores(Db):F2})   load {Us(Load),5:F0} us ({Cores(Load):F2})   total {Us(Api + Db + Load),6:F0} us   machine {Cores(Machine):F2} of {Environment.ProcessorCount} cores busy");
    }

    /// <summary>Busy time of all cores together: the first line of /proc/stat less idle and iowait.</summary>
    private static TimeSpan MachineBusy()
    {
        var cpu = File.ReadLines("/proc/stat").First().Split(' ', StringSplitOptions.RemoveEmptyEntries);
        long Field(int i) => long.Parse(cpu[i], CultureInfo.InvariantCulture);
        // user nice system idle iowait irq softirq steal: guest time is already inside user.
        var busy = Field(1) + Field(2) + Field(3) + Field(6) + Field(7) + Field(8);
        return TimeSpan.FromSeconds(busy / TicksPerSecond);
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
