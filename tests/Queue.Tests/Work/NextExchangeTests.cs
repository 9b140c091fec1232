using System.Net;
using System.Net.Http.Json;
using System.Text.Json;

namespace Queue.Tests.Work;

/// <summary>CONTRACT v1.3: complete and fail with <c>next</c> answer the next items in the /next shape, in one exchange.</summary>
public sealed class NextExchangeTests(DirectClaimFixture fx) : IClassFixture<DirectClaimFixture>
{
    [Fact]
    public async Task A_completion_with_next_answers_200_with_the_next_item_in_the_shape_of_next()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var job = await fx.NewJobAsync(tenant.Id, 2, ["ex-complete"]);
        using var http = fx.Worker();
        var first = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "ex-complete" } });

        using var r = await WorkFixture.FinishAsync(http, first, "complete", new
        {
            leaseToken = first.GetProperty("leaseToken").GetString(),
            next = new { tasks = new[] { "ex-complete" }, max = 5, lease = 60, worker = "w-1" },
        });

        Assert.Equal(HttpStatusCode.OK, r.StatusCode);
        var second = Assert.Single((await r.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("items").EnumerateArray());
        Assert.Equal(Fields(first), Fields(second));
        Assert.NotEqual(first.GetProperty("id").GetInt64(), second.GetProperty("id").GetInt64());
        Assert.Equal(job, second.GetProperty("jobId").GetInt64());
        Assert.Equal(tenant.Name, second.GetProperty("tenant").GetString());
        Assert.Equal(1, second.GetProperty("attempt").GetInt32());
        Assert.True(second.GetProperty("leaseExpiresAt").GetDateTime() > fx.Now.AddSeconds(50));
        Assert.Equal(2, (await fx.ItemAsync(first.GetProperty("id").GetInt64())).State);
        Assert.Equal(1, (await fx.ItemAsync(second.GetProperty("id").GetInt64())).State);

        // The item it answered is leased to its caller: its token completes it.
        Assert.Equal(HttpStatusCode.NoContent, (await WorkFixture.FinishAsync(http, second, "complete")).StatusCode);
        Assert.Equal(2L, await fx.ScalarAsync<long>("SELECT items_done FROM jobs WHERE id = @Id", new { Id = job }));
    }

    [Fact]
    public async Task A_fail_with_next_records_the_failure_and_answers_the_next_item()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        await fx.NewJobAsync(tenant.Id, 2, ["ex-fail"]);
        using var http = fx.Worker();
        var first = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "ex-fail" } });

        using var r = await WorkFixture.FinishAsync(http, first, "fail", new
        {
            leaseToken = first.GetProperty("leaseToken").GetString(),
            error = "it broke",
            retry = true,
            next = new { tasks = new[] { "ex-fail" } },
        });

        Assert.Equal(HttpStatusCode.OK, r.StatusCode);
        var second = Assert.Single((await r.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("items").EnumerateArray());
        Assert.NotEqual(first.GetProperty("id").GetInt64(), second.GetProperty("id").GetInt64());
        var failed = await fx.ItemAsync(first.GetProperty("id").GetInt64());
        Assert.Equal(0, failed.State);
        Assert.Equal("it broke", failed.LastError);
        Assert.True(failed.DueAt > fx.Now);
    }

    [Fact]
    public async Task Without_next_complete_and_fail_answer_204_as_before()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        await fx.NewJobAsync(tenant.Id, 3, ["ex-plain"]);
        using var http = fx.Worker();
        var a = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "ex-plain" } });
        var b = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "ex-plain" } });

        using var completed = await WorkFixture.FinishAsync(http, a, "complete", new { leaseToken = a.GetProperty("leaseToken").GetString(), next = (object?)null });
        using var failed = await WorkFixture.FinishAsync(http, b, "fail", new { leaseToken = b.GetProperty("leaseToken").GetString(), error = "x" });

        Assert.Equal(HttpStatusCode.NoContent, completed.StatusCode);
        Assert.Equal(HttpStatusCode.NoContent, failed.StatusCode);
        Assert.Empty(await completed.Content.ReadAsByteArrayAsync());
        // Nothing was claimed by either: the third item is still there for /next.
        Assert.Single(await WorkFixture.ClaimAsync(http, new { tasks = new[] { "ex-plain" }, max = 5 }));
    }

    [Fact]
    public async Task A_stale_lease_with_next_gets_409_and_claims_nothing()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        await fx.NewJobAsync(tenant.Id, 2, ["ex-stale"]);
        using var http = fx.Worker();
        var first = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "ex-stale" }, lease = 10 });
        fx.Clock.Advance(TimeSpan.FromSeconds(11));
        var again = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "ex-stale" }, lease = 60 });
        Assert.Equal(first.GetProperty("id").GetInt64(), again.GetProperty("id").GetInt64());

        foreach (var verb in new[] { "complete", "fail" })
        {
            using var r = await WorkFixture.FinishAsync(http, first, verb, new
            {
                leaseToken = first.GetProperty("leaseToken").GetString(),
                next = new { tasks = new[] { "ex-stale" }, max = 10 },
            });
            Assert.Equal(HttpStatusCode.Conflict, r.StatusCode);
            Assert.Equal("application/problem+json", r.Content.Headers.ContentType?.MediaType);
            Assert.False(string.IsNullOrEmpty((await r.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("detail").GetString()));
        }

        // The other item was never claimed: it is ready, on its first attempt, and /next hands it out.
        var other = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "ex-stale" }, max = 10 });
        Assert.NotEqual(first.GetProperty("id").GetInt64(), other.GetProperty("id").GetInt64());
        Assert.Equal(1, other.GetProperty("attempt").GetInt32());
    }

    [Fact]
    public async Task Bad_next_fields_get_400_naming_each_and_finish_nothing()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        await fx.NewJobAsync(tenant.Id, 1, ["ex-bad"]);
        using var http = fx.Worker();
        var item = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "ex-bad" } });
        var token = item.GetProperty("leaseToken").GetString();

        using var r = await WorkFixture.FinishAsync(http, item, "complete", new
        {
            leaseToken = token,
            next = new { max = 0, wait = 31, lease = 5, tasks = new[] { "Not A Task" }, requestId = "" },
        });
        Assert.Equal(HttpStatusCode.BadRequest, r.StatusCode);
        var problem = await r.Content.ReadFromJsonAsync<JsonElement>();
        var fields = problem.GetProperty("errors").EnumerateObject().Select(e => e.Name).Order().ToArray();
        Assert.Equal(["next.lease", "next.max", "next.requestId", "next.tasks", "next.wait"], fields);
        Assert.Contains("'next.", problem.GetProperty("detail").GetString(), StringComparison.Ordinal);

        using var failed = await WorkFixture.FinishAsync(http, item, "fail", new { leaseToken = token, error = "x", next = new { max = 101 } });
        Assert.Equal(HttpStatusCode.BadRequest, failed.StatusCode);
        Assert.True((await failed.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("errors").TryGetProperty("next.max", out _));

        using var unknown = await WorkFixture.FinishAsync(http, item, "complete", new { leaseToken = token, next = new { priority = 1 } });
        Assert.Equal(HttpStatusCode.BadRequest, unknown.StatusCode);
        Assert.Contains("priority", await unknown.Content.ReadAsStringAsync(), StringComparison.Ordinal);

        using var wrongType = await WorkFixture.FinishAsync(http, item, "complete", new { leaseToken = token, next = new { max = "5" } });
        Assert.Equal(HttpStatusCode.BadRequest, wrongType.StatusCode);
        Assert.Contains("max", await wrongType.Content.ReadAsStringAsync(), StringComparison.Ordinal);

        // Nothing was finished: the lease still holds and completes as usual.
        Assert.Equal(1, (await fx.ItemAsync(item.GetProperty("id").GetInt64())).State);
        Assert.Equal(HttpStatusCode.NoContent, (await WorkFixture.FinishAsync(http, item, "complete")).StatusCode);
    }

    [Fact]
    public async Task A_completion_with_next_and_nothing_to_claim_answers_200_with_no_items()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        await fx.NewJobAsync(tenant.Id, 1, ["ex-empty"]);
        using var http = fx.Worker();
        var item = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "ex-empty" } });

        using var r = await WorkFixture.FinishAsync(http, item, "complete", new { leaseToken = item.GetProperty("leaseToken").GetString(), next = new { tasks = new[] { "ex-empty" } } });

        Assert.Equal(HttpStatusCode.OK, r.StatusCode);
        Assert.Equal(0, (await r.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("items").GetArrayLength());
        Assert.Equal(2, (await fx.ItemAsync(item.GetProperty("id").GetInt64())).State);
    }

    [Fact]
    public async Task A_retried_completion_with_the_same_request_id_answers_the_same_items()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        await fx.NewJobAsync(tenant.Id, 3, ["ex-retry"]);
        using var http = fx.Worker();
        var item = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "ex-retry" } });
        var body = new { leaseToken = item.GetProperty("leaseToken").GetString(), next = new { tasks = new[] { "ex-retry" }, requestId = Guid.NewGuid().ToString("N") } };

        using var first = await WorkFixture.FinishAsync(http, item, "complete", body);
        using var retried = await WorkFixture.FinishAsync(http, item, "complete", body);

        Assert.Equal(HttpStatusCode.OK, first.StatusCode);
        Assert.Equal(HttpStatusCode.OK, retried.StatusCode);
        var a = Assert.Single((await first.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("items").EnumerateArray());
        var b = Assert.Single((await retried.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("items").EnumerateArray());
        Assert.Equal(a.GetProperty("id").GetInt64(), b.GetProperty("id").GetInt64());
        Assert.Equal(a.GetProperty("leaseToken").GetString(), b.GetProperty("leaseToken").GetString());
        // One item is left for /next: the retry claimed nothing more.
        Assert.Single(await WorkFixture.ClaimAsync(http, new { tasks = new[] { "ex-retry" }, max = 5 }));
    }

    private static string[] Fields(JsonElement item) => item.EnumerateObject().Select(p => $"{p.Name}:{p.Value.ValueKind}").Order().ToArray();
}
