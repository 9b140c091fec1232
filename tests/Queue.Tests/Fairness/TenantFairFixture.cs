using Dapper;
using Queue.Core.Data;
using Queue.Core.Ordering;
using Queue.Core.Security;
using Queue.Tests.Work;

namespace Queue.Tests.Fairness;

/// <summary>The Api with <c>Ordering:Policy = tenant-fair</c>, a fake clock, and every claim straight from a claim transaction.</summary>
public sealed class TenantFairFixture : WorkFixture
{
    protected override IDictionary<string, string?> Settings => new Dictionary<string, string?>
    {
        ["Ordering:Policy"] = "tenant-fair",
        ["Claims:Prefetch"] = "0",
    };

    /// <summary>Claims one item at a time, <paramref name="n"/> times, and returns the tenant name of each.</summary>
    public async Task<List<string>> ClaimTenantsAsync(string task, int n, int max = 1)
    {
        using var http = Worker();
        var names = new List<string>();
        for (var i = 0; i < n; i++)
        {
            names.AddRange((await ClaimAsync(http, new { tasks = new[] { task }, max })).Select(e => e.GetProperty("tenant").GetString()!));
        }
        return names;
    }

    public async Task<List<long>> ClaimJobsAsync(string task, int n)
    {
        using var http = Worker();
        var jobs = new List<long>();
        for (var i = 0; i < n; i++)
        {
            jobs.AddRange((await ClaimAsync(http, new { tasks = new[] { task } })).Select(e => e.GetProperty("jobId").GetInt64()));
        }
        return jobs;
    }

    /// <summary>A technician's override, as the Admin applies it: the overrides row and the lanes' value at once.</summary>
    public Task OverrideAsync(long jobId, long priority) => OverrideAsync(this, jobId, priority);

    public static async Task OverrideAsync(WorkFixture fx, long jobId, long priority)
    {
        var tech = await fx.Technicians.CreateAsync("tech-" + Guid.NewGuid().ToString("N")[..8], "a-long-enough-password", default);
        await using var conn = await fx.DataSource.OpenConnectionAsync();
        await using var tx = await conn.BeginReadCommittedAsync(default);
        await conn.ExecuteAsync("""
            INSERT INTO overrides (job_id, priority, active, reason, technician_id, expires_at, created_at, updated_at)
            VALUES (@JobId, @Priority, 1, 'test', @Tech, @Expires, @Now, @Now)
            """, new { JobId = jobId, Priority = priority, Tech = tech.Id, Expires = fx.Now.AddHours(1), fx.Now }, tx);
        await new OrderingLanes(new OrderingCalendar(fx.Clock, Microsoft.Extensions.Options.Options.Create(new OrderingOptions())), fx.Clock)
            .ApplyOverrideAsync(conn, tx, jobId, priority, default);
        await tx.CommitAsync();
    }
}
