using System.Collections.Concurrent;
using Queue.Client;

namespace Queue.Tests.Client;

/// <summary>
/// <c>WorkAsync</c> that answers each finish before claiming again claims its next item in the finish itself
/// (<see cref="WorkOptions.ClaimWithFinish"/>, CONTRACT v1.3): the calls it makes are counted on the wire.
/// </summary>
public sealed class WorkExchangeTests(ClientFixture fx) : IClassFixture<ClientFixture>
{
    [Fact]
    public async Task A_worker_that_waits_for_its_finishes_claims_its_next_items_in_them_not_with_next_calls()
    {
        var run = await WorkAsync("exchange-on", 20, new WorkOptions { FinishInBackground = false }, failEvery: 0);

        Assert.Equal(20, run.Completes);
        Assert.True(run.Nexts <= 3, $"{run.Nexts} POST /next calls for 20 items");
        Assert.All(run.States, s => Assert.Equal("done", s));
        Assert.Equal(20, run.Outcomes.Count(o => o == WorkOutcome.Completed));
    }

    [Fact]
    public async Task Failed_items_claim_the_next_in_the_fail_too()
    {
        var run = await WorkAsync("exchange-fail", 12, new WorkOptions { FinishInBackground = false }, failEvery: 3);

        Assert.Equal(8, run.Completes);
        Assert.Equal(4, run.Fails);
        Assert.True(run.Nexts <= 3, $"{run.Nexts} POST /next calls for 12 items");
        Assert.Equal(4, run.States.Count(s => s == "dead"));
        Assert.Equal(8, run.States.Count(s => s == "done"));
    }

    [Fact]
    public async Task Without_claim_with_finish_each_item_takes_its_own_next_call_as_before()
    {
        var run = await WorkAsync("exchange-off", 10, new WorkOptions { FinishInBackground = false, ClaimWithFinish = false }, failEvery: 0);

        Assert.Equal(10, run.Completes);
        Assert.True(run.Nexts >= 10, $"{run.Nexts} POST /next calls for 10 items");
        Assert.All(run.States, s => Assert.Equal("done", s));
    }

    private sealed record Run(int Nexts, int Completes, int Fails, string[] States, WorkOutcome[] Outcomes);

    /// <summary>One slot works a job of <paramref name="count"/> items until idle for a second; every <paramref name="failEvery"/>th item throws for good.</summary>
    private async Task<Run> WorkAsync(string task, int count, WorkOptions options, int failEvery)
    {
        var (_, key) = await fx.CustomerAsync(task);
        long jobId;
        using (var customer = fx.Client(key))
        {
            jobId = (await customer.CreateJobAsync(new NewJob(task, [task], Documents:
                [.. Enumerable.Range(0, count).Select(i => new InlineDocument($"d{i}.txt", "text/plain", [(byte)('a' + (i % 26))]))]))).Id;
        }
        var clientOptions = new QueueClientOptions { BaseAddress = fx.BaseAddress, ApiKey = fx.WorkerKey };
        var calls = new ConcurrentQueue<string>();
        using var http = new HttpClient(new Counting(calls) { InnerHandler = QueueHttp.CreateHandler(clientOptions) });
        using var worker = new QueueClient(http, clientOptions);
        var outcomes = new ConcurrentQueue<WorkOutcome>();
        options.IdleExit = TimeSpan.FromSeconds(1);
        options.PollWait = TimeSpan.FromSeconds(1);
        options.OnFinished = (_, outcome, _) => outcomes.Enqueue(outcome);
        var handled = 0;
        using var timeout = new CancellationTokenSource(TimeSpan.FromMinutes(1));
        await worker.WorkAsync([task], (_, _) =>
        {
            var n = Interlocked.Increment(ref handled);
            return failEvery > 0 && n % failEvery == 0 ? throw new PermanentWorkException("no good") : Task.CompletedTask;
        }, 1, timeout.Token, options);

        using var customerAfter = fx.Client(key);
        var states = (await customerAfter.ListItemsAsync(jobId)).Items.Select(i => i.State).ToArray();
        return new Run(calls.Count(c => c == "/next"), calls.Count(c => c.EndsWith("/complete", StringComparison.Ordinal)),
            calls.Count(c => c.EndsWith("/fail", StringComparison.Ordinal)), states, [.. outcomes]);
    }

    private sealed class Counting(ConcurrentQueue<string> calls) : DelegatingHandler
    {
        protected override Task<HttpResponseMessage> SendAsync(HttpRequestMessage request, CancellationToken cancellationToken)
        {
            calls.Enqueue(request.RequestUri!.AbsolutePath);
            return base.SendAsync(request, cancellationToken);
        }
    }
}
