using Queue.Core.Hosting;

namespace Queue.Scheduler;

/// <summary>Section <c>Scheduler</c>: how the Quartz cluster behaves.</summary>
public sealed class SchedulerOptions
{
    /// <summary>How often each node records that it is alive.</summary>
    public TimeSpan CheckinInterval { get; set; } = TimeSpan.FromSeconds(5);

    /// <summary>A node silent for this long past its check-in is presumed dead; a peer recovers its firings.</summary>
    public TimeSpan CheckinMisfireThreshold { get; set; } = TimeSpan.FromSeconds(15);

    /// <summary>A trigger this late is handled by its misfire policy (the rewrite's: fire now) instead of firing late.</summary>
    public TimeSpan MisfireThreshold { get; set; } = TimeSpan.FromSeconds(30);

    /// <summary>How long an idle node waits before it looks again for triggers another node scheduled.</summary>
    public TimeSpan IdleWaitTime { get; set; } = TimeSpan.FromSeconds(5);
}

public sealed class SchedulerOptionsRules() : OptionsRules<SchedulerOptions>("Scheduler")
{
    protected override IEnumerable<(string Field, bool Holds, string MustBe)> Rules(SchedulerOptions o) =>
    [
        (nameof(o.CheckinInterval), o.CheckinInterval >= TimeSpan.FromMilliseconds(500), "must be at least 0.5 seconds"),
        (nameof(o.CheckinMisfireThreshold), o.CheckinMisfireThreshold >= TimeSpan.FromSeconds(1), "must be at least 1 second"),
        (nameof(o.MisfireThreshold), o.MisfireThreshold >= TimeSpan.FromSeconds(1), "must be at least 1 second"),
        (nameof(o.IdleWaitTime), o.IdleWaitTime >= TimeSpan.FromSeconds(1), "must be at least 1 second"),
    ];
}
