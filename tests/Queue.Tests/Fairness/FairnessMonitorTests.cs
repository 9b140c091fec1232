using Queue.Core.Fairness;
using Queue.Tests.Admin;

namespace Queue.Tests.Fairness;

/// <summary>The Api's fairness monitor: claims and ready samples in, the same metrics as the simulator out.</summary>
public sealed class FairnessMonitorTests(TenantFairFixture fx) : IClassFixture<TenantFairFixture>
{
    [Fact]
    public async Task The_monitor_turns_the_claims_it_saw_into_jain_starvation_and_metrics()
    {
        var (a, _) = await fx.NewCustomerAsync();
        var (b, _) = await fx.NewCustomerAsync();
        await fx.NewJobAsync(a.Id, 4, ["monitor"]);
        await fx.NewJobAsync(b.Id, 4, ["monitor"]);
        var monitor = fx.Service<FairnessMonitor>();
        await monitor.SampleAsync(default);

        var served = await fx.ClaimTenantsAsync("monitor", 4);
        Assert.Equal(2, served.Count(n => n == a.Name));
        fx.Clock.Advance(TimeSpan.FromSeconds(61));
        var report = await monitor.ReportAsync(default);

        // Both tenants had work at every claim and got half of them: received = entitled, so J = 1.
        var minute = Assert.Single(report.Minutes);
        Assert.Equal(1.0, minute.Jain, 9);
        Assert.Equal(2, minute.Tenants);
        Assert.Equal(4, minute.Decisions);
        // Two items of each job are still ready and unclaimed since the last claim, 61 s ago.
        Assert.Equal(61, report.Starvation.Single(s => s.Tenant == a.Name).Seconds, 0);
        using var http = fx.Api.CreateClient();
        var metrics = await http.GetStringAsync(new Uri("/metrics", UriKind.Relative));
        Assert.Contains("queue_fairness_jain ", metrics, StringComparison.Ordinal);
        Assert.Contains("queue_fairness_starvation_seconds", metrics, StringComparison.Ordinal);
        var stored = await FairnessMonitor.RecentAsync(fx.DataSource, fx.Now, default);
        Assert.Contains(stored, s => s.Instance == monitor.Instance && s.Minutes.Count == 1);
    }
}
