using Dapper;
using MySqlConnector;
using Queue.Client;

namespace Queue.Tests.Client;

/// <summary>
/// <c>WorkAsync</c> with one slot, while its items' completions are held up in the database (the test holds their row
/// locks, so each complete waits inside the service): with <see cref="WorkOptions.FinishInBackground"/> the slot claims
/// and runs its next item meanwhile, up to <see cref="WorkOptions.FinishesInFlight"/> unanswered completions; without
/// it, the next claim waits for the complete's answer.
/// </summary>
public sealed class WorkOverlapTests(ClientFixture fx) : IClassFixture<ClientFixture>
{
    private static readonly TimeSpan Patience = TimeSpan.FromSeconds(30);

    [Fact]
    public async Task A_slot_runs_its_next_item_while_the_previous_completion_is_still_on_its_way()
    {
        var run = await RunWithEarlierCompletionsHeldAsync("overlap-on", 2, new WorkOptions());

        Assert.True(run.LastStartedWhileEarlierHeld, "the second item's handler waited for the first item's completion");
        Assert.Equal(["done", "done"], run.States);
        Assert.Equal([WorkOutcome.Completed, WorkOutcome.Completed], run.Outcomes);
    }

    [Fact]
    public async Task A_slot_of_one_keeps_claiming_while_two_of_its_completions_are_unanswered()
    {
        var run = await RunWithEarlierCompletionsHeldAsync("overlap-two", 3, new WorkOptions());

        Assert.True(run.LastStartedWhileEarlierHeld, "the third item's handler waited for an earlier item's completion");
        Assert.Equal(["done", "done", "done"], run.States);
        Assert.Equal([WorkOutcome.Completed, WorkOutcome.Completed, WorkOutcome.Completed], run.Outcomes);
    }

    [Fact]
    public async Task With_one_finish_in_flight_the_slot_waits_for_an_earlier_completion_before_its_third_item()
    {
        var run = await RunWithEarlierCompletionsHeldAsync("overlap-bound", 3, new WorkOptions { FinishesInFlight = 1 });

        Assert.False(run.LastStartedWhileEarlierHeld, "the third item's handler ran while two completions were unanswered");
        Assert.Equal(["done", "done", "done"], run.States);
    }

    [Fact]
    public async Task Without_finishing_in_background_the_next_claim_waits_for_the_completion_to_be_answered()
    {
        var run = await RunWithEarlierCompletionsHeldAsync("overlap-off", 2, new WorkOptions { FinishInBackground = false });

        Assert.False(run.LastStartedWhileEarlierHeld, "the second item's handler ran while the first completion was unanswered");
        Assert.Equal(["done", "done"], run.States);
    }

    private sealed record Run(bool LastStartedWhileEarlierHeld, string[] States, WorkOutcome[] Outcomes);

    /// <summary>
    /// A job of <paramref name="count"/> items of <paramref name="task"/>, worked with one slot. Each handler but the
    /// last locks its own item's row from a connection of the test before it returns, so that item's complete waits on
    /// the lock. The locks are let go when the last handler starts, or after 3 s if it does not.
    /// </summary>
    private async Task<Run> RunWithEarlierCompletionsHeldAsync(string task, int count, WorkOptions options)
    {
        var (_, key) = await fx.CustomerAsync(task);
        long jobId;
        using (var customer = fx.Client(key))
        {
            jobId = (await customer.CreateJobAsync(new NewJob(task, [task], Documents:
                [.. Enumerable.Range(0, count).Select(i => new InlineDocument($"d{i}.txt", "text/plain", [(byte)('a' + i)]))]))).Id;
        }
        await using var holder = new MySqlConnection(fx.ConnectionString);
        await holder.OpenAsync();
        await using var held = await holder.BeginTransactionAsync();
        var released = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var lastStarted = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var outcomes = new List<WorkOutcome>();
        var handled = 0;
        var anyAnswered = false;
        var lastStartedWhileEarlierHeld = false;
        using var stop = new CancellationTokenSource();
        using var worker = fx.Client(fx.WorkerKey);
        options.OnFinished = (_, outcome, _) =>
        {
            lock (outcomes)
            {
                outcomes.Add(outcome);
                anyAnswered = true;
                if (outcomes.Count == count)
                {
                    stop.Cancel();
                }
            }
        };
        var work = worker.WorkAsync([task], async (item, ct) =>
        {
            var n = Interlocked.Increment(ref handled);
            if (n < count)
            {
                await holder.ExecuteAsync("SELECT id FROM items WHERE id = @Id FOR UPDATE", new { item.Item.Id }, held);
                if (n == 1)
                {
                    _ = ReleaseAfterAsync(held, lastStarted.Task, released);
                }
                return;
            }
            lock (outcomes)
            {
                lastStartedWhileEarlierHeld = !anyAnswered && !released.Task.IsCompleted;
            }
            lastStarted.TrySetResult();
            await released.Task;
        }, 1, stop.Token, options);

        await work.WaitAsync(Patience);
        using var customerAfter = fx.Client(key);
        var states = (await customerAfter.ListItemsAsync(jobId)).Items.Select(i => i.State).ToArray();
        return new Run(lastStartedWhileEarlierHeld, states, [.. outcomes]);
    }

    /// <summary>Lets the held rows go once the last handler has started, or after 3 s without it.</summary>
    private static async Task ReleaseAfterAsync(MySqlTransaction held, Task lastStarted, TaskCompletionSource released)
    {
        await Task.WhenAny(lastStarted, Task.Delay(TimeSpan.FromSeconds(3)));
        await held.RollbackAsync();
        released.TrySetResult();
    }
}
