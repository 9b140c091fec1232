using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Queue.Tests.Work;

namespace Queue.Tests.Fairness;

internal static class ExplainKit
{
    public static async Task<(HttpStatusCode Status, JsonElement Body)> ExplainAsync(WorkFixture fx, string customerKey, long jobId)
    {
        using var http = fx.Api.CreateClient();
        http.DefaultRequestHeaders.Authorization = new System.Net.Http.Headers.AuthenticationHeaderValue("Bearer", customerKey);
        using var r = await http.GetAsync(new Uri($"/jobs/{jobId}/explain", UriKind.Relative));
        return (r.StatusCode, await r.Content.ReadFromJsonAsync<JsonElement>());
    }

    public static long Ahead(JsonElement e, string reason) => e.GetProperty("ahead").GetProperty(reason).GetInt64();
}

/// <summary>Explain under the seed policy: jobs ahead by (value, id), grouped by why. Alone in its database: it counts every job.</summary>
public sealed class SeedExplainReasonTests(DirectClaimFixture fx) : IClassFixture<DirectClaimFixture>
{
    [Fact]
    public async Task Explain_groups_the_jobs_ahead_into_smaller_older_and_override()
    {
        var (t, key) = await fx.NewCustomerAsync();
        var (other, _) = await fx.NewCustomerAsync();
        await fx.NewJobAsync(other.Id, 2, ["explain-seed"]);          // smaller (2 < 5), another tenant's: seed does not care
        var older = await fx.NewJobAsync(t.Id, 5, ["explain-seed"]);  // same value, lower id: older
        var bumped = await fx.NewJobAsync(t.Id, 50, ["explain-seed"]);
        var mine = await fx.NewJobAsync(t.Id, 5, ["explain-seed"]);
        await new TenantFairFixtureHelpers(fx).OverrideAsync(bumped, 1);

        var (status, e) = await ExplainKit.ExplainAsync(fx, key, mine);

        Assert.Equal(HttpStatusCode.OK, status);
        Assert.Equal("seed", e.GetProperty("policy").GetString());
        Assert.Equal("smallest", e.GetProperty("mode").GetString());
        Assert.Equal(5, e.GetProperty("value").GetInt64());
        Assert.False(e.GetProperty("override").GetBoolean());
        Assert.Equal(1, ExplainKit.Ahead(e, "smaller"));
        Assert.Equal(1, ExplainKit.Ahead(e, "older"));
        Assert.Equal(1, ExplainKit.Ahead(e, "override"));
        Assert.Equal(0, ExplainKit.Ahead(e, "anotherTenantsTurn"));
        Assert.Equal(3, e.GetProperty("jobsAhead").GetInt64());
        Assert.Equal(4, e.GetProperty("position").GetInt64());
        Assert.Equal("2026-11-22T03:00:00Z", e.GetProperty("nextRewrite").GetProperty("at").GetString());
        Assert.Equal("oldest", e.GetProperty("nextRewrite").GetProperty("mode").GetString());
        Assert.Contains("1 smaller", e.GetProperty("summary").GetString(), StringComparison.Ordinal);
        _ = older;
    }
}

public sealed class SeedExplainTests(DirectClaimFixture fx) : IClassFixture<DirectClaimFixture>
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

/// <summary>Explain under tenant-fair: other tenants' jobs count only as turns, one per tenant whose turn comes first.</summary>
public sealed class TenantFairExplainTests(TenantFairFixture fx) : IClassFixture<TenantFairFixture>
{
    [Fact]
    public async Task Explain_counts_the_own_tenants_jobs_by_value_and_other_tenants_by_turn()
    {
        // Created first, so their ids are lower and they win the tie of equal turns.
        var (x, _) = await fx.NewCustomerAsync();
        var (y, _) = await fx.NewCustomerAsync();
        var (t, key) = await fx.NewCustomerAsync();
        for (var i = 0; i < 5; i++)
        {
            await fx.NewJobAsync(x.Id, 1, ["explain-fair"]); // five tiny jobs of one tenant: one turn, not five jobs ahead
        }
        await fx.NewJobAsync(y.Id, 1, ["explain-fair"]);
        await fx.NewJobAsync(t.Id, 2, ["explain-fair"]);
        var mine = await fx.NewJobAsync(t.Id, 4, ["explain-fair"]);

        var (_, e) = await ExplainKit.ExplainAsync(fx, key, mine);

        Assert.Equal("tenant-fair", e.GetProperty("policy").GetString());
        Assert.Equal(1, ExplainKit.Ahead(e, "smaller"));
        Assert.Equal(0, ExplainKit.Ahead(e, "older"));
        Assert.Equal(2, ExplainKit.Ahead(e, "anotherTenantsTurn"));
        Assert.Equal(4, e.GetProperty("position").GetInt64());
        Assert.Contains("other tenants whose turn comes first", e.GetProperty("summary").GetString(), StringComparison.Ordinal);
    }
}

/// <summary>The override helper of <see cref="TenantFairFixture"/>, for any work fixture.</summary>
internal sealed class TenantFairFixtureHelpers(WorkFixture fx)
{
    public Task OverrideAsync(long jobId, long priority) => TenantFairFixture.OverrideAsync(fx, jobId, priority);
}
