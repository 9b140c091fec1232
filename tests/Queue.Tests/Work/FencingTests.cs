using System.Net;
using System.Net.Http.Json;
using System.Text.Json;

namespace Queue.Tests.Work;

public sealed class FencingTests(DirectClaimFixture fx) : IClassFixture<DirectClaimFixture>
{
    [Fact]
    public async Task A_stale_lease_token_gets_409_and_there_is_exactly_one_completion()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var job = await fx.NewJobAsync(tenant.Id, 1, ["fence"]);
        using var http = fx.Worker();
        var first = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "fence" }, lease = 10 });

        // The lease expires and another worker takes the item: the first token is now stale everywhere.
        fx.Clock.Advance(TimeSpan.FromSeconds(11));
        var second = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "fence" }, lease = 60 });
        Assert.Equal(first.GetProperty("id").GetInt64(), second.GetProperty("id").GetInt64());
        Assert.NotEqual(first.GetProperty("leaseToken").GetString(), second.GetProperty("leaseToken").GetString());

        var stale = first.GetProperty("leaseToken").GetString();
        await AssertConflictAsync(await WorkFixture.FinishAsync(http, first, "complete"));
        await AssertConflictAsync(await WorkFixture.FinishAsync(http, first, "fail", new { leaseToken = stale, error = "x" }));
        await AssertConflictAsync(await WorkFixture.FinishAsync(http, first, "extend", new { leaseToken = stale, lease = 60 }));
        using (var doc = new HttpRequestMessage(HttpMethod.Get, $"/items/{first.GetProperty("id").GetInt64()}/document"))
        {
            doc.Headers.Add("Lease-Token", stale);
            await AssertConflictAsync(await http.SendAsync(doc));
        }
        var item = await fx.ItemAsync(first.GetProperty("id").GetInt64());
        Assert.Equal(1, item.State);
        Assert.Equal(2, item.Attempts);

        Assert.Equal(HttpStatusCode.NoContent, (await WorkFixture.FinishAsync(http, second, "complete")).StatusCode);
        // Completing again changes nothing: the token that completed it is confirmed (its 204 may have been lost), the stale one refused.
        Assert.Equal(HttpStatusCode.NoContent, (await WorkFixture.FinishAsync(http, second, "complete")).StatusCode);
        await AssertConflictAsync(await WorkFixture.FinishAsync(http, first, "complete"));
        Assert.Equal(1L, await fx.ScalarAsync<long>("SELECT items_done FROM jobs WHERE id = @Id", new { Id = job }));
        Assert.Equal(2, (await fx.ItemAsync(first.GetProperty("id").GetInt64())).State);
    }

    [Fact]
    public async Task Concurrent_completions_of_one_lease_record_one_completion()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var job = await fx.NewJobAsync(tenant.Id, 1, ["fence-twice"]);
        using var http = fx.Worker();
        var item = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "fence-twice" } });
        var answers = await Task.WhenAll(Enumerable.Range(0, 8).Select(_ => WorkFixture.FinishAsync(http, item, "complete")));
        // The same lease completed again is confirmed (RepeatedCompletionTests); what matters here is one completion.
        Assert.All(answers, a => Assert.Equal(HttpStatusCode.NoContent, a.StatusCode));
        Assert.Equal(1L, await fx.ScalarAsync<long>("SELECT items_done FROM jobs WHERE id = @Id", new { Id = job }));
        Assert.Equal(2L, await fx.ScalarAsync<long>("SELECT state FROM jobs WHERE id = @Id", new { Id = job }));
    }

    [Fact]
    public async Task A_malformed_or_missing_token_is_refused_and_an_unknown_item_is_404()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        await fx.NewJobAsync(tenant.Id, 1, ["fence-bad"]);
        using var http = fx.Worker();
        var item = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "fence-bad" } });
        var id = item.GetProperty("id").GetInt64();
        await AssertConflictAsync(await http.PostAsJsonAsync($"/items/{id}/complete", new { leaseToken = "not-a-token" }));
        var missing = await http.PostAsJsonAsync($"/items/{id}/complete", new { });
        Assert.Equal(HttpStatusCode.BadRequest, missing.StatusCode);
        Assert.True((await missing.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("errors").TryGetProperty("leaseToken", out _));
        await AssertConflictAsync(await http.GetAsync(new Uri($"/items/{id}/document", UriKind.Relative)));
        var unknown = await http.PostAsJsonAsync("/items/999999999/complete", new { leaseToken = item.GetProperty("leaseToken").GetString() });
        Assert.Equal(HttpStatusCode.NotFound, unknown.StatusCode);
        Assert.Equal(1, (await fx.ItemAsync(id)).State);
    }

    [Fact]
    public async Task The_document_streams_with_a_live_lease_and_extend_moves_the_expiry()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        await fx.NewJobAsync(tenant.Id, 1, ["fence-doc"]);
        using var http = fx.Worker();
        var item = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "fence-doc" }, lease = 10 });
        var id = item.GetProperty("id").GetInt64();
        using var doc = new HttpRequestMessage(HttpMethod.Get, $"/items/{id}/document");
        doc.Headers.Add("Lease-Token", item.GetProperty("leaseToken").GetString());
        var r = await http.SendAsync(doc);
        Assert.Equal(HttpStatusCode.OK, r.StatusCode);
        Assert.Equal("text/plain", r.Content.Headers.ContentType?.MediaType);
        Assert.Equal("hello", await r.Content.ReadAsStringAsync());

        var extended = await WorkFixture.FinishAsync(http, item, "extend", new { leaseToken = item.GetProperty("leaseToken").GetString(), lease = 600 });
        Assert.Equal(HttpStatusCode.OK, extended.StatusCode);
        var expires = (await extended.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("leaseExpiresAt").GetDateTime();
        Assert.True(expires > fx.Now.AddSeconds(590));
        // Past the original 10 s the lease still holds: nobody else can claim the item.
        fx.Clock.Advance(TimeSpan.FromSeconds(30));
        Assert.Empty(await WorkFixture.ClaimAsync(http, new { tasks = new[] { "fence-doc" } }));
        Assert.Equal(HttpStatusCode.NoContent, (await WorkFixture.FinishAsync(http, item, "complete")).StatusCode);
    }

    private static async Task AssertConflictAsync(HttpResponseMessage r)
    {
        Assert.Equal(HttpStatusCode.Conflict, r.StatusCode);
        Assert.Equal("application/problem+json", r.Content.Headers.ContentType?.MediaType);
        Assert.Equal(409, (await r.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("status").GetInt32());
    }
}
