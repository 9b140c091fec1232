using Queue.Core.Fairness;
using Queue.Tests.Admin;

namespace Queue.Tests.Fairness;

/// <summary>The Admin shows what the Api processes reported, and a job's explanation.</summary>
public sealed class AdminFairnessTests(AdminFixture fx) : IClassFixture<AdminFixture>
{
    private static readonly System.Text.Json.JsonSerializerOptions Web = new(System.Text.Json.JsonSerializerDefaults.Web);

    [Fact]
    public async Task The_dashboard_shows_each_api_processs_fairness_report()
    {
        var now = DateTime.UtcNow;
        var minute = new DateTime(now.Ticks - (now.Ticks % TimeSpan.TicksPerMinute), DateTimeKind.Utc).AddMinutes(-1);
        var snapshot = new FairnessSnapshot("api-test:1", now, [new MinuteFairness(minute, 0.875, 3, 120)],
            [new StretchBucket("1-10", 10, 7, 1.5, 3.25)], [new TenantStarvation("acme", 42)], 12.5);
        await fx.Seed.ExecuteAsync("INSERT INTO fairness_reports (instance, at, report) VALUES ('api-test:1', @At, @Report)",
            new { At = now, Report = System.Text.Json.JsonSerializer.Serialize(snapshot, Web) });

        using var b = await fx.SignedInAsync();
        var doc = await b.GetAsync("/");
        var section = doc.QuerySelector("#fairness")!.TextContent;

        Assert.Contains("api-test:1", section, StringComparison.Ordinal);
        Assert.Contains("0.875", section, StringComparison.Ordinal);
        Assert.Contains("3.3", doc.QuerySelector(".fairness-stretch")!.TextContent, StringComparison.Ordinal);
        Assert.Contains("acme", doc.QuerySelector(".fairness-starvation")!.TextContent, StringComparison.Ordinal);
    }

    [Fact]
    public async Task The_job_page_explains_the_jobs_position_like_the_api()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        await fx.Seed.JobAsync(tenant.Id, "small-one", 2);
        var job = await fx.Seed.JobAsync(tenant.Id, "bigger", 9);

        using var b = await fx.SignedInAsync();
        var doc = await b.GetAsync($"/jobs/{job}");

        Assert.Equal("tenant-fair", doc.QuerySelector("#explain-policy")!.TextContent.Trim()); // the default, as in the Api
        // The reason depends on the hour's mode: the small job is both smaller and older than this one.
        Assert.Matches("1 smaller|1 older", doc.QuerySelector("#explain")!.TextContent);
    }
}
