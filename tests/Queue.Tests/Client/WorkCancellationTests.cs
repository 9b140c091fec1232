using Queue.Client;

namespace Queue.Tests.Client;

/// <summary><c>WorkAsync</c> cancelled while a handler holds an item: the item is finished within the grace, or handed back.</summary>
public sealed class WorkCancellationTests(ClientFixture fx) : IClassFixture<ClientFixture>
{
    private static readonly TimeSpan Patience = TimeSpan.FromSeconds(30);

    [Fact]
    public async Task Cancelling_WorkAsync_releases_an_item_whose_handler_outlives_the_grace_so_another_worker_claims_it_at_once()
    {
        var (jobId, key) = await OneItemJobAsync("hold-release");
        using var customer = fx.Client(key);
        using var worker = fx.Client(fx.WorkerKey);
        var started = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        WorkOutcome? outcome = null;
        using var stop = new CancellationTokenSource();
        // A lease far longer than the test: if the item were simply dropped, nobody could claim it again before the end.
        var options = new WorkOptions { Lease = TimeSpan.FromMinutes(10), ShutdownGrace = TimeSpan.FromMilliseconds(300), OnFinished = (_, o, _) => outcome = o };
        var work = worker.WorkAsync(["hold-release"], async (_, ct) =>
        {
            started.TrySetResult();
            await Task.Delay(Timeout.InfiniteTimeSpan, ct);
        }, 1, stop.Token, options);

        await started.Task.WaitAsync(Patience);
        await stop.CancelAsync();
        await work.WaitAsync(Patience);

        Assert.Equal(WorkOutcome.Released, outcome);
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
        var (jobId, key) = await OneItemJobAsync("hold-finish");
        using var customer = fx.Client(key);
        using var worker = fx.Client(fx.WorkerKey);
        var started = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        WorkOutcome? outcome = null;
        using var stop = new CancellationTokenSource();
        var options = new WorkOptions { ShutdownGrace = TimeSpan.FromSeconds(10), OnFinished = (_, o, _) => outcome = o };
        // The handler honours its token: it completes only if that token stays live for the grace after the cancel.
        var work = worker.WorkAsync(["hold-finish"], async (_, ct) =>
        {
            started.TrySetResult();
            await Task.Delay(TimeSpan.FromMilliseconds(700), ct);
        }, 1, stop.Token, options);

        await started.Task.WaitAsync(Patience);
        await stop.CancelAsync();
        await work.WaitAsync(Patience);

        Assert.Equal(WorkOutcome.Completed, outcome);
        Assert.Equal("done", Assert.Single((await customer.ListItemsAsync(jobId)).Items).State);
        Assert.Equal("done", (await customer.GetJobAsync(jobId)).State);
    }

    /// <summary>A new tenant's job of one item of <paramref name="task"/>, and that tenant's key.</summary>
    private async Task<(long JobId, string Key)> OneItemJobAsync(string task)
    {
        var (_, key) = await fx.CustomerAsync(task);
        using var customer = fx.Client(key);
        var job = await customer.CreateJobAsync(new NewJob(task, [task], Documents: [new InlineDocument("a.txt", "text/plain", "hello"u8.ToArray())]));
        return (job.Id, key);
    }
}
