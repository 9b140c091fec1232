using System.Net;
using Dapper;
using Queue.Tests.Infrastructure;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Reliability;

/// <summary>A job that committed but whose first status could not be read: the retry gets a job status all the same.</summary>
public sealed class CommittedAnswerTests(ApiFixture fx) : IClassFixture<ApiFixture>
{
    [Fact]
    public async Task When_the_status_read_after_the_commit_fails_the_retry_replays_a_job_status_not_a_bare_id()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        const string body = """{"name":"status-fails","tasks":["text"],"documents":[{"name":"a.txt","content":"eA=="}]}""";
        HttpRequestMessage Post()
        {
            var m = new HttpRequestMessage(HttpMethod.Post, U("/jobs")) { Content = Json(body) };
            m.Headers.TryAddWithoutValidation("Idempotency-Key", "status-fails-1");
            return m;
        }
        // The first status of this fresh Api samples the completion rate (tenant_counters, which the creating transaction
        // never touches): with that table locked the request parks right after its commit, and killing the parked
        // session makes the status read fail there.
        await using var locker = await fx.DataSource.OpenConnectionAsync();
        await locker.ExecuteAsync("LOCK TABLES tenant_counters WRITE");
        HttpResponseMessage first;
        try
        {
            var sent = http.SendAsync(Post());
            long parked = 0;
            await Eventually.UntilAsync(async () => (parked = await fx.CountAsync(
                "SELECT COALESCE(MAX(id), 0) FROM information_schema.processlist WHERE db = @Db AND state = 'Waiting for table metadata lock' AND info LIKE '%SUM(completions)%'",
                new { Db = fx.DatabaseName })) > 0, "the status read waits after the commit");
            await using (var killer = await fx.DataSource.OpenConnectionAsync())
            {
                await killer.ExecuteAsync($"KILL CONNECTION {parked}");
            }
            first = await sent;
        }
        finally
        {
            await locker.ExecuteAsync("UNLOCK TABLES");
        }
        Assert.False(first.IsSuccessStatusCode, $"the first request failed after its commit, got {(int)first.StatusCode}");

        HttpResponseMessage retry = null!;
        await Eventually.UntilAsync(async () =>
        {
            retry = await http.SendAsync(Post());
            return retry.StatusCode != HttpStatusCode.Conflict;
        }, "the first request has finished", 30);

        Assert.Equal(HttpStatusCode.Created, retry.StatusCode);
        Assert.Equal(1, await fx.CountAsync("SELECT COUNT(*) FROM jobs WHERE name = 'status-fails'"));
        var status = await retry.BodyAsync();
        Assert.Equal("status-fails", status.GetProperty("name").GetString());
        Assert.Equal("closed", status.GetProperty("state").GetString());
        Assert.Equal(1, status.GetProperty("items").GetProperty("ready").GetInt64());
        Assert.Equal(System.Text.Json.JsonValueKind.Null, status.GetProperty("position").ValueKind);
        Assert.Equal("a.txt", status.GetProperty("created")[0].GetProperty("name").GetString());
    }
}
