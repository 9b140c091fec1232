using Dapper;
using MySqlConnector;
using Queue.Client;

namespace Queue.Tests.Client;

/// <summary>
/// <c>WorkAsync</c> with one slot and two items, while the first item's completion is held up in the database (the test
/// holds its row lock, so the complete waits inside the service): with <see cref="WorkOptions.FinishInBackground"/> the
/// slot claims and runs the second item meanwhile; without it, the second claim waits for the complete's answer.
/// </summary>
public sealed class WorkOverlapTests(ClientFixture fx) : IClassFixture<ClientFixture>
{
    private static readonly TimeSpan Patience = TimeSpan.FromSeconds(30);

    [Fact]
    public async Task A_slot_runs_its_next_item_while_the_previous_completion_is_still_on_its_way()
    {
        var run = await RunTwoWithFirstCompletionHeldAsync("overlap-on", finishInBackground: true);

        Assert.True(run.SecondStartedWhileFirstHeld, "the second item's handler waited for the first item's completion");
        Assert.Equal(["done", "done"], run.States);
        Assert.Equal([WorkOutcome.Completed, WorkOutcome.Completed], run.Outcomes);
    }

    [Fact]
    public async Task Without_finishing_in_background_the_next_claim_waits_for_the_completion_to_be_answered()
    {
        var run = await RunTwoWithFirstCompletionHeldAsync("overlap-off", finishInBackground: false);

        Assert.False(run.SecondStartedWhileFirstHeld, "the second item's handler ran while the first completion was unanswered");
        Assert.Equal(["done", "done"], run.States);
    }

    private sealed record Run(bool SecondStartedWhileFirstHeld, string[] States, WorkOutcome[] Outcomes);

    /// <summary>
    /// A job of two items of <paramref name="task"/>, worked with one slot. The first handler locks its own item's row
    /// from a connection of the test before it returns, so that item's complete waits on the lock. The lock is let go
    /// when the second handler starts, or after 3 s if it does not.
    /// </summary>
    private async Task<Run> RunTwoWithFirstCompletionHeldAsync(string task, bool finishInBackground)
    {
        var (_, key) = await fx.CustomerAsync(task);
        long jobId;
        using (var customer = fx.Client(key))
        {
            jobId = (await customer.CreateJobAsync(new NewJob(task, [task], Documents:
            [
                new InlineDocument("a.txt", "text/plain", "a"u8.ToArray()),
                new InlineDocument("b.txt", "text/plain", "b"u8.ToArray()),
            ]))).Id;
        }
        await using var holder = new MySqlConnection(fx.ConnectionString);
        await holder.OpenAsync();
        await using var held = await holder.BeginTransactionAsync();
        var released = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var secondStarted = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var outcomes = new List<WorkOutcome>();
        var handled = 0;
        var firstAnswered = false;
        var secondStartedWhileFirstHeld = false;
        using var stop = new CancellationTokenSource();
        using var worker = fx.Client(fx.WorkerKey);
        var options = new WorkOptions
        {
            FinishInBackground = finishInBackground,
            OnFinished = (_, outcome, _) =>
            {
                lock (outcomes)
                {
                    outcomes.Add(outcome);
                    firstAnswered = true;
                    if (outcomes.Count == 2)
                    {
                        stop.Cancel();
                    }
                }
            },
        };
        var work = worker.WorkAsync([task], async (item, ct) =>
        {
            if (Interlocked.Increment(ref handled) == 1)
            {
                await holder.ExecuteAsync("SELECT id FROM items WHERE id = @Id FOR UPDATE", new { item.Item.Id }, held);
                _ = ReleaseAfterAsync(held, secondStarted.Task, released);
                return;
            }
            lock (outcomes)
            {
                secondStartedWhileFirstHeld = !firstAnswered && !released.Task.IsCompleted;
            }
            secondStarted.TrySetResult();
            await released.Task;
        }, 1, stop.Token, options);

        await work.WaitAsync(Patience);
        using var customerAfter = fx.Client(key);
        var states = (await customerAfter.ListItemsAsync(jobId)).Items.Select(i => i.State).ToArray();
        return new Run(secondStartedWhileFirstHeld, states, [.. outcomes]);
    }

    /// <summary>Lets the held row go once the second handler has started, or after 3 s without it.</summary>
    private static async Task ReleaseAfterAsync(MySqlTransaction held, Task secondStarted, TaskCompletionSource released)
    {
        await Task.WhenAny(secondStarted, Task.Delay(TimeSpan.FromSeconds(3)));
        await held.RollbackAsync();
        released.TrySetResult();
    }
}
