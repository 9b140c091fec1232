using Queue.Client;

namespace Queue.Tests.Client;

/// <summary><c>WorkAsync</c> cancelled while a handler holds an item: the item is finished within the grace, or handed back.</summary>
public sealed class WorkCancellationTests(ClientFixture fx) : IClassFixture<ClientFixture>
{
    private static readonly TimeSpan Patience = TimeSpan.FromSeconds(30);

    [Fact]
    public async Task Cancelling_WorkAsync_releases_an_item_whose_handler_outlives_the_grace_so_another_worker_claims_it_at_once()
    {
        // A lease far longer than the test: if the item were simply dropped, nobody could claim it again before the end.
        var (jobId, key, outcome) = await CancelWhileHeldAsync("hold-release",
            new WorkOptions { Lease = TimeSpan.FromMinutes(10), ShutdownGrace = TimeSpan.FromMilliseconds(300) },
            ct => Task.Delay(Timeout.InfiniteTimeSpan, ct));

        Assert.Equal(WorkOutcome.Released, outcome);
        using var customer = fx.Client(key);
        var released = Assert.Single((await customer.ListItemsAsync(jobId)).Items);
        Assert.NotEqual("leased", released.State);
        Assert.Contains("released", released.LastError, StringComparison.Ordinal);
        // Claimable again after the contract's first retry backoff (about a second), long before the 10-minute lease.
        using var other = fx.Client(fx.WorkerKey);
        var again = Assert.Single(await other.ClaimAsync(["hold-release"], max: 1, wait: TimeSpan.FromSeconds(10)));
        Assert.Equal(released.Id, again.Id);
        Assert.Equal(2, again.Attempt);
        await other.CompleteAsync(again);
    }

    [Fact]
    public async Task Cancelling_WorkAsync_lets_a_handler_that_finishes_within_the_grace_complete_its_item()
    {
        // The handler honours its token: it completes only if that token stays live for the grace after the cancel.
        var (jobId, key, outcome) = await CancelWhileHeldAsync("hold-finish",
            new WorkOptions { ShutdownGrace = TimeSpan.FromSeconds(10) },
            ct => Task.Delay(TimeSpan.FromMilliseconds(700), ct));

        Assert.Equal(WorkOutcome.Completed, outcome);
        using var customer = fx.Client(key);
        Assert.Equal("done", Assert.Single((await customer.ListItemsAsync(jobId)).Items).State);
        Assert.Equal("done", (await customer.GetJobAsync(jobId)).State);
    }

    /// <summary>
    /// A new tenant's job of one item of <paramref name="task"/>, worked by a handler that runs <paramref name="hold"/>;
    /// WorkAsync is cancelled as soon as the handler starts and awaited. Returns the job, the tenant's key and how the
    /// item ended.
    /// </summary>
    private async Task<(long JobId, string Key, WorkOutcome? Outcome)> CancelWhileHeldAsync(string task, WorkOptions options, Func<CancellationToken, Task> hold)
    {
        var (_, key) = await fx.CustomerAsync(task);
        long jobId;
        using (var customer = fx.Client(key))
        {
            jobId = (await customer.CreateJobAsync(new NewJob(task, [task], Documents: [new InlineDocument("a.txt", "text/plain", "hello"u8.ToArray())]))).Id;
        }
        using var worker = fx.Client(fx.WorkerKey);
        var started = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        WorkOutcome? outcome = null;
        options.OnFinished = (_, o, _) => outcome = o;
        using var stop = new CancellationTokenSource();
        var work = worker.WorkAsync([task], async (_, ct) =>
        {
            started.TrySetResult();
            await hold(ct);
        }, 1, stop.Token, options);

        await started.Task.WaitAsync(Patience);
        await stop.CancelAsync();
        await work.WaitAsync(Patience);
        return (jobId, key, outcome);
    }
}
