using Dapper;
using Microsoft.Extensions.Time.Testing;
using Queue.Core.Claims;
using Queue.Core.Fairness;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Reliability;

/// <summary>the fairness monitor's memory and sample cost stay flat however deep the backlog.</summary>
public sealed class FairnessMonitorBoundsTests(DatabaseFixture fx) : IClassFixture<DatabaseFixture>
{
    private const int Jobs = FairnessMonitor.MaxSampledLanes + 1_000;

    private async Task<long> SeedBacklogAsync()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        await using var conn = await fx.DataSource.OpenConnectionAsync();
        await conn.ExecuteAsync($"""
            INSERT INTO jobs (tenant_id, name, state, tasks, documents, items_total, created_at, closed_at, updated_at)
            SELECT @Tenant, CONCAT('backlog-', seq), 1, 'text', 1, 3, '2026-01-01', '2026-01-01', '2026-01-01' FROM seq_1_to_{Jobs};
            INSERT INTO ordering (job_id, task, tenant_id, value, mode, blocked, available_at, updated_at)
            SELECT id, 'text', tenant_id, id, 'smallest', 0, '2000-01-01', '2026-01-01' FROM jobs WHERE tenant_id = @Tenant;
            """, new { Tenant = tenant.Id });
        return tenant.Id;
    }

    [Fact]
    public async Task Samples_of_an_unchanged_backlog_add_nothing_and_read_at_most_the_head_of_the_ordering()
    {
        var tenant = await SeedBacklogAsync();
        var clock = new FakeTimeProvider(DateTimeOffset.UtcNow);
        var monitor = new FairnessMonitor(fx.DataSource, clock);

        await monitor.SampleAsync(default);
        var first = monitor.TracedEvents;
        Assert.InRange(first, 1, FairnessMonitor.MaxSampledLanes);
        for (var i = 0; i < 10; i++)
        {
            clock.Advance(FairnessMonitor.SampleEvery);
            await monitor.SampleAsync(default);
        }
        Assert.Equal(first, monitor.TracedEvents);

        // Past the window the samples' events are trimmed, yet the work they recorded still counts as waiting.
        clock.Advance(FairnessMonitor.Window + TimeSpan.FromMinutes(1));
        await monitor.SampleAsync(default);
        var report = await monitor.ReportAsync(default);
        Assert.Equal(0, monitor.TracedEvents);
        await using var conn = await fx.DataSource.OpenConnectionAsync();
        var name = await conn.ExecuteScalarAsync<string>("SELECT name FROM tenants WHERE id = @tenant", new { tenant });
        Assert.True(report.Starvation.Single(s => s.Tenant == name).Seconds >= FairnessMonitor.Window.TotalSeconds,
            "the backlog waited the whole window without a claim");
    }

    [Fact]
    public void Claims_past_the_cap_keep_the_trace_at_its_cap()
    {
        var monitor = new FairnessMonitor(fx.DataSource, new FakeTimeProvider(DateTimeOffset.UtcNow));
        var item = new TakenItem[1];
        for (var job = 1L; job <= FairnessMonitor.MaxEvents + 10_000; job++)
        {
            item[0] = new TakenItem(job, job, 1, job, "text", 1, [], DateTime.UtcNow, false);
            monitor.Claimed(item);
        }
        Assert.Equal(FairnessMonitor.MaxEvents, monitor.TracedEvents);
    }
}
