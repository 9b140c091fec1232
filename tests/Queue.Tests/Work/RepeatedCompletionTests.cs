using System.Net;

namespace Queue.Tests.Work;

/// <summary>A worker whose 204 was lost sends its complete again: that must not read as a lost lease.</summary>
public sealed class RepeatedCompletionTests(DirectClaimFixture fx) : IClassFixture<DirectClaimFixture>
{
    [Fact]
    public async Task A_complete_repeated_with_the_same_token_answers_204_again_and_records_one_completion()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var job = await fx.NewJobAsync(tenant.Id, 1, ["again"]);
        using var http = fx.Worker();
        var item = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "again" } });

        Assert.Equal(HttpStatusCode.NoContent, (await WorkFixture.FinishAsync(http, item, "complete")).StatusCode);
        Assert.Equal(HttpStatusCode.NoContent, (await WorkFixture.FinishAsync(http, item, "complete")).StatusCode);

        Assert.Equal(1L, await fx.ScalarAsync<long>("SELECT items_done FROM jobs WHERE id = @Id", new { Id = job }));
        Assert.Equal(2, (await fx.ItemAsync(item.GetProperty("id").GetInt64())).State);
        // Another token is still refused: only the completion that happened may be confirmed again.
        var other = new { leaseToken = new string('0', 32) };
        Assert.Equal(HttpStatusCode.Conflict, (await WorkFixture.FinishAsync(http, item, "complete", other)).StatusCode);
        Assert.Equal(HttpStatusCode.Conflict, (await WorkFixture.FinishAsync(http, item, "fail", new { leaseToken = item.GetProperty("leaseToken").GetString(), error = "x" })).StatusCode);
    }

    [Fact]
    public async Task Concurrent_completes_of_one_lease_all_answer_204_and_record_one_completion()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var job = await fx.NewJobAsync(tenant.Id, 1, ["again-at-once"]);
        using var http = fx.Worker();
        var item = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "again-at-once" } });

        var answers = await Task.WhenAll(Enumerable.Range(0, 8).Select(_ => WorkFixture.FinishAsync(http, item, "complete")));

        Assert.All(answers, a => Assert.Equal(HttpStatusCode.NoContent, a.StatusCode));
        Assert.Equal(1L, await fx.ScalarAsync<long>("SELECT items_done FROM jobs WHERE id = @Id", new { Id = job }));
    }
}
