using Dapper;
using MySqlConnector;
using Queue.Core.Fairness;
using Queue.Tests.Scheduler;

namespace Queue.Tests.Fairness;

/// <summary>
/// The tenant-fair claim asks, every round, which tenants have lanes. Its cost must grow with tenants, not with the
/// queue: here one tenant has 20,000 lanes in a table the server opened while it was empty, the case in which MariaDB
/// answered the old <c>GROUP BY tenant_id</c> by reading every lane's index entry.
/// </summary>
public sealed class TenantProbeTests
{
    private static readonly DateTime Now = new(2026, 11, 29, 10, 0, 0, DateTimeKind.Utc);

    [Theory]
    [InlineData(null)]
    [InlineData("a")]
    public async Task The_tenants_with_lanes_are_found_with_a_few_index_reads_beside_twenty_thousand_lanes_of_one_tenant(string? task)
    {
        await using var db = await FreshDatabase.CreateAsync();
        await using var conn = await db.DataSource.OpenConnectionAsync();
        await conn.ExecuteScalarAsync<long>("SELECT COUNT(*) FROM ordering"); // opened, and its statistics read, while empty
        await AddLanesAsync(conn, tenant: 7, from: 1, count: 20_000, task: "a");
        await AddLanesAsync(conn, tenant: 3, from: 100_001, count: 2, task: "a");
        await AddLanesAsync(conn, tenant: 11, from: 100_011, count: 1, task: "a");
        await AddLanesAsync(conn, tenant: 5, from: 100_021, count: 3, task: "b");
        await AddLanesAsync(conn, tenant: 9, from: 100_031, count: 1, task: "a", blocked: 1);

        await conn.ExecuteAsync("FLUSH STATUS");
        var found = new HashSet<long>();
        await new LaneTenants().AddAsync(conn, task, found, CancellationToken.None);
        var reads = await ReadsAsync(conn);

        Assert.Equal(task is null ? [3L, 5, 7, 11] : [3L, 7, 11], found.Order());
        Assert.True(reads < 50, $"{reads} index entries read to find {found.Count} tenants");
    }

    [Fact]
    public async Task More_tenants_than_one_round_trip_probes_are_all_found()
    {
        await using var db = await FreshDatabase.CreateAsync();
        await using var conn = await db.DataSource.OpenConnectionAsync();
        for (var t = 1; t <= 75; t++)
        {
            await AddLanesAsync(conn, tenant: t, from: t * 10, count: 2, task: "a");
        }
        var probe = new LaneTenants();

        var first = new HashSet<long>();
        await probe.AddAsync(conn, "a", first, CancellationToken.None);
        var second = new HashSet<long>();
        await probe.AddAsync(conn, "a", second, CancellationToken.None);

        Assert.Equal(Enumerable.Range(1, 75).Select(t => (long)t), first.Order());
        Assert.Equal(first.Order(), second.Order());
    }

    private static Task<int> AddLanesAsync(MySqlConnection conn, long tenant, long from, int count, string task, int blocked = 0) =>
        conn.ExecuteAsync("""
            INSERT INTO ordering (job_id, task, tenant_id, value, mode, blocked, available_at, updated_at)
            SELECT @From + seq - 1, @Task, @Tenant, @From + seq, 'smallest', @Blocked, @Now, @Now FROM seq_1_to_20000 WHERE seq <= @Count
            """, new { From = from, Task = task, Tenant = tenant, Count = count, Blocked = blocked, Now });

    private static async Task<long> ReadsAsync(MySqlConnection conn) =>
        (await conn.QueryAsync<(string Name, string Value)>("SHOW SESSION STATUS LIKE 'Handler_read_%'"))
            .Where(r => r.Name is "Handler_read_next" or "Handler_read_prev" or "Handler_read_rnd_next" or "Handler_read_key" or "Handler_read_first")
            .Sum(r => long.Parse(r.Value, System.Globalization.CultureInfo.InvariantCulture));
}
