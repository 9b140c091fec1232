using AngleSharp.Html.Dom;
using Queue.Core.Security;
using Queue.Tests.Work;

namespace Queue.Tests.Admin;

public sealed class TenantSharesTests(ApiAndAdminFixture fx) : IClassFixture<ApiAndAdminFixture>
{
    [Fact]
    public async Task The_dashboard_shows_each_tenants_share_of_the_last_minutes_claims_beside_its_weight()
    {
        var (heavy, _) = await fx.NewCustomerAsync("heavy-" + Guid.NewGuid().ToString("N")[..6], new TenantSettings(["text"], Weight: 3));
        var (light, _) = await fx.NewCustomerAsync("light-" + Guid.NewGuid().ToString("N")[..6]);
        var (idle, _) = await fx.NewCustomerAsync("idle-" + Guid.NewGuid().ToString("N")[..6], new TenantSettings(["text"], Weight: 5));
        // The light tenant's job is older and smaller: under the seed's order it would take every claim.
        await fx.NewJobAsync(light.Id, 30, ["shares"]);
        await fx.NewJobAsync(heavy.Id, 40, ["shares"]);
        await fx.SnapshotAsync(DateTimeOffset.UtcNow.AddMinutes(-2)); // an earlier minute, without claims
        using (var http = fx.Worker())
        {
            for (var i = 0; i < 20; i++)
            {
                await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "shares" } });
            }
        }
        await Eventually.UntilAsync(async () => await fx.ScalarAsync<long>("SELECT COALESCE(SUM(claims), 0) FROM tenant_counters") == 20,
            "the Api flushed its claim counts", seconds: 10);
        Assert.True(await fx.SnapshotAsync(DateTimeOffset.UtcNow));

        var doc = await fx.DashboardAsync();

        var rows = ShareRows(doc);
        Assert.Equal(["3", "15", "75 %", "75 %"], rows[heavy.Name][..4]);
        Assert.Equal(["1", "5", "25 %", "25 %"], rows[light.Name][..4]);
        Assert.False(rows.ContainsKey(idle.Name), "a tenant without work in the minute is owed nothing and is left out");
        Assert.Contains("20 claims", doc.QuerySelector("#shares")!.TextContent, StringComparison.Ordinal);
        Assert.Contains("StatsFlushMilliseconds", doc.QuerySelector("#shares")!.TextContent, StringComparison.Ordinal);
    }

    /// <summary>The table's cells after the tenant's name, by tenant name.</summary>
    internal static Dictionary<string, string[]> ShareRows(IHtmlDocument doc) =>
        doc.QuerySelectorAll("#tenant-shares tbody tr").ToDictionary(
            r => r.QuerySelector("td")!.TextContent.Trim(),
            r => r.QuerySelectorAll("td").Skip(1).Select(c => c.TextContent.Trim()).ToArray());
}

/// <summary>Which minute and which tenants the shares table reads, on snapshots written by hand.</summary>
public sealed class TenantShareRuleTests(AdminFixture fx) : IClassFixture<AdminFixture>
{
    [Fact]
    public async Task Only_the_newest_minute_counts_and_a_tenant_with_ready_items_but_no_claims_is_still_owed_its_weights_share()
    {
        var (served, _) = await fx.NewCustomerAsync();
        var (starved, _) = await fx.NewCustomerAsync(settings: new TenantSettings(["text"], Weight: 2));
        var (idle, _) = await fx.NewCustomerAsync();
        var now = DateTime.UtcNow;
        var minute = new DateTime(now.Ticks - (now.Ticks % TimeSpan.TicksPerMinute), DateTimeKind.Utc);
        const string insert = """
            INSERT INTO snapshots (at, tenant_id, ready, leased, done, dead, cancelled, claims, completions)
            VALUES (@At, @T, @Ready, 0, 0, 0, 0, @Claims, 0)
            """;
        await fx.Seed.ExecuteAsync(insert, new { At = minute.AddMinutes(-1), T = starved.Id, Ready = 50, Claims = 500 });
        await fx.Seed.ExecuteAsync(insert, new { At = minute, T = served.Id, Ready = 0, Claims = 12 });
        await fx.Seed.ExecuteAsync(insert, new { At = minute, T = starved.Id, Ready = 50, Claims = 0 });
        await fx.Seed.ExecuteAsync(insert, new { At = minute, T = idle.Id, Ready = 0, Claims = 0 });

        using var b = await fx.SignedInAsync();
        var rows = TenantSharesTests.ShareRows(await b.GetAsync("/"));

        Assert.Equal(["1", "12", "100 %", "33.3 %", "0"], rows[served.Name]);
        Assert.Equal(["2", "0", "0 %", "66.7 %", "50"], rows[starved.Name]);
        Assert.Equal(2, rows.Count);
    }
}
