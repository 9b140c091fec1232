using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Queue.Tests.Work;

namespace Queue.Tests.Fairness;

public sealed class SeedExplainTests(SeedClaimFixture fx) : IClassFixture<SeedClaimFixture>
{
    [Fact]
    public async Task Explain_is_in_the_openapi_document()
    {
        using var http = fx.Api.CreateClient();
        var doc = await http.GetFromJsonAsync<JsonElement>(new Uri("/openapi/v1.json", UriKind.Relative));
        var op = doc.GetProperty("paths").GetProperty("/jobs/{id}/explain").GetProperty("get");
        Assert.True(op.GetProperty("responses").TryGetProperty("404", out _));
        Assert.True(op.GetProperty("responses").TryGetProperty("200", out _));
    }

    [Fact]
    public async Task The_bumped_job_shows_its_override_and_until_when()
    {
        var (t, key) = await fx.NewCustomerAsync();
        var job = await fx.NewJobAsync(t.Id, 3, ["explain-bump"]);
        await new TenantFairFixtureHelpers(fx).OverrideAsync(job, -5);

        var (_, e) = await ExplainKit.ExplainAsync(fx, key, job);

        Assert.True(e.GetProperty("override").GetBoolean());
        Assert.Equal(-5, e.GetProperty("value").GetInt64());
        Assert.Equal(fx.Now.AddHours(1), e.GetProperty("overrideUntil").GetDateTime().ToUniversalTime(), TimeSpan.FromSeconds(1));
    }

    [Fact]
    public async Task Another_tenants_job_is_404_exactly_like_a_missing_one()
    {
        var (owner, _) = await fx.NewCustomerAsync();
        var (_, strangerKey) = await fx.NewCustomerAsync();
        var job = await fx.NewJobAsync(owner.Id, 1, ["explain-404"]);

        var (foreign, body) = await ExplainKit.ExplainAsync(fx, strangerKey, job);
        var (missing, missingBody) = await ExplainKit.ExplainAsync(fx, strangerKey, 987654321);

        Assert.Equal(HttpStatusCode.NotFound, foreign);
        Assert.Equal(HttpStatusCode.NotFound, missing);
        Assert.Equal(missingBody.GetProperty("title").GetString(), body.GetProperty("title").GetString());
    }

    [Fact]
    public async Task A_job_with_nothing_ready_has_no_position_and_says_why()
    {
        var (t, key) = await fx.NewCustomerAsync();
        var job = await fx.NewJobAsync(t.Id, 1, ["explain-none"]);
        using var worker = fx.Worker();
        await WorkFixture.ClaimOneAsync(worker, new { tasks = new[] { "explain-none" } });

        var (_, e) = await ExplainKit.ExplainAsync(fx, key, job);

        Assert.Equal(JsonValueKind.Null, e.GetProperty("position").ValueKind);
        Assert.Contains("leased", e.GetProperty("summary").GetString(), StringComparison.Ordinal);
    }
}
