using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Queue.Local;
using Queue.Tests.Infrastructure;
using Queue.Tests.Work;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Reliability;

/// <summary>
/// The server commits and the connection is lost before its answer arrives (<see cref="FaultProxy.CutAfterCommit"/>):
/// the write must be counted once, neither redone nor reported as not done.
/// </summary>
public sealed class LostCommitAnswerTests(FaultProxyApiFixture fx) : IClassFixture<FaultProxyApiFixture>
{
    [Fact]
    public async Task Eight_keyed_jobs_at_once_whose_first_commit_answer_is_lost_make_exactly_eight_jobs()
    {
        var (tenant, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        HttpRequestMessage Post(int i)
        {
            var m = new HttpRequestMessage(HttpMethod.Post, U("/jobs"))
            {
                Content = Json($$"""{"name":"lost-{{i}}","tasks":["text"],"documents":[{"name":"a","content":"aGVsbG8="}]}"""),
            };
            m.Headers.TryAddWithoutValidation("Idempotency-Key", $"lost-{i}");
            return m;
        }

        var cutsBefore = fx.Proxy.Cuts;
        fx.Proxy.CutAfterCommit(1, onlyAfter: "INSERT INTO jobs");
        var answers = await Task.WhenAll(Enumerable.Range(0, 8).Select(i => http.SendAsync(Post(i))));
        fx.Proxy.CutAfterCommit(0);
        // A client retries whatever did not succeed, with its key, as the contract says.
        for (var i = 0; i < 8; i++)
        {
            var k = i;
            await Eventually.HoldsAsync(async () =>
            {
                if (answers[k].StatusCode != HttpStatusCode.Created)
                {
                    answers[k] = await http.SendAsync(Post(k));
                }
                return answers[k].StatusCode == HttpStatusCode.Created;
            }, TimeSpan.FromSeconds(5), TimeSpan.FromMilliseconds(100));
        }

        Assert.Equal(cutsBefore + 1, fx.Proxy.Cuts);
        Assert.All(answers, a => Assert.Equal(HttpStatusCode.Created, a.StatusCode));
        Assert.Equal(8, await fx.CountAsync("SELECT COUNT(*) FROM jobs WHERE tenant_id = @Id", new { tenant.Id }));
        Assert.Equal(8, await fx.CountAsync("SELECT COUNT(*) FROM documents WHERE tenant_id = @Id", new { tenant.Id }));
        Assert.Equal(8, answers.Select(a => a.Headers.Location).Distinct().Count());
    }

    [Fact]
    public async Task A_keyed_upload_whose_commit_answer_is_lost_lands_once()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var job = await http.OpenJobAsync(["text"]);
        HttpRequestMessage Upload()
        {
            var content = new ByteArrayContent("hello"u8.ToArray());
            content.Headers.ContentType = new("text/plain");
            var m = new HttpRequestMessage(HttpMethod.Post, U($"/jobs/{job}/documents?name=a.txt")) { Content = content };
            m.Headers.TryAddWithoutValidation("Idempotency-Key", "lost-upload");
            return m;
        }

        var cutsBefore = fx.Proxy.Cuts;
        fx.Proxy.CutAfterCommit(1, onlyAfter: "INSERT INTO documents");
        var answer = await http.SendAsync(Upload());
        fx.Proxy.CutAfterCommit(0);
        await Eventually.HoldsAsync(async () =>
        {
            if (answer.StatusCode != HttpStatusCode.Created)
            {
                answer = await http.SendAsync(Upload());
            }
            return answer.StatusCode == HttpStatusCode.Created;
        }, TimeSpan.FromSeconds(5), TimeSpan.FromMilliseconds(100));

        Assert.Equal(cutsBefore + 1, fx.Proxy.Cuts);
        Assert.Equal(HttpStatusCode.Created, answer.StatusCode);
        Assert.Equal(1, await fx.CountAsync("SELECT COUNT(*) FROM documents WHERE job_id = @Job", new { Job = job }));
    }

    [Fact]
    public async Task A_completion_whose_commit_answer_is_lost_is_confirmed_on_retry_and_counted_once()
    {
        var (job, worker) = await OneItemJobAsync("lost-complete");
        var item = await WorkFixture.ClaimOneAsync(worker, new { tasks = new[] { "lost-complete" } });

        // Only the completion's statement sets an item's state to 2 (done).
        var cutsBefore = fx.Proxy.Cuts;
        fx.Proxy.CutAfterCommit(1, onlyAfter: "state = 2,");
        var first = await WorkFixture.FinishAsync(worker, item, "complete");
        fx.Proxy.CutAfterCommit(0);
        var again = await WorkFixture.FinishAsync(worker, item, "complete");

        Assert.Equal(cutsBefore + 1, fx.Proxy.Cuts);
        Assert.Contains(first.StatusCode, new[] { HttpStatusCode.NoContent, HttpStatusCode.ServiceUnavailable });
        Assert.Equal(HttpStatusCode.NoContent, again.StatusCode);
        Assert.Equal(1, await fx.CountAsync("SELECT items_done FROM jobs WHERE id = @Job", new { Job = job }));
    }

    [Fact]
    public async Task A_claim_whose_commit_answer_is_lost_gives_its_item_back_at_once_and_counts_no_attempt()
    {
        var (job, worker) = await OneItemJobAsync("lost-claim");

        // Only a claim's lease statement sets attempts = attempts + 1 with a CASE of tokens.
        var cutsBefore = fx.Proxy.Cuts;
        fx.Proxy.CutAfterCommit(1, onlyAfter: "SET state = 1, attempts = attempts + 1");
        using var first = await worker.PostAsJsonAsync("/next", new { tasks = new[] { "lost-claim" }, max = 1 });
        fx.Proxy.CutAfterCommit(0);

        Assert.Equal(cutsBefore + 1, fx.Proxy.Cuts);
        Assert.Equal(HttpStatusCode.ServiceUnavailable, first.StatusCode);
        // The committed lease went to nobody: before, the item stayed leased for the lease time (300 s) and then
        // counted a failed attempt. Now it is claimable at once, and the claim that gets it is its first attempt.
        var item = await WorkFixture.ClaimOneAsync(worker, new { tasks = new[] { "lost-claim" } });
        Assert.Equal(1, item.GetProperty("attempt").GetInt32());
        Assert.Equal(1, await fx.CountAsync("SELECT attempts FROM items WHERE job_id = @Job", new { Job = job }));
    }

    /// <summary>A new tenant's job of one document for <paramref name="task"/>, and a worker's client.</summary>
    private async Task<(long Job, HttpClient Worker)> OneItemJobAsync(string task)
    {
        var (_, key) = await fx.NewCustomerAsync();
        var customer = fx.Api.ClientWithKey(key);
        var job = (await customer.CreateJobAsync(new { name = task, tasks = new[] { task }, documents = new[] { new { name = "a", content = B64("a") } } }))
            .GetProperty("id").GetInt64();
        return (job, fx.Api.ClientWithKey(await fx.NewWorkerKeyAsync()));
    }
}
