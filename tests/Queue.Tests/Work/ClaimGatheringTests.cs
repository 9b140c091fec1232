using System.Collections.Concurrent;
using Queue.Core.Claims;
using Queue.Core.Data;
using Queue.Core.Hosting;

namespace Queue.Tests.Work;

/// <summary>
/// A claim transaction waits, before it starts, for the callers expected back (<see cref="GroupCommitQueue{T}.GatherUpTo"/>),
/// and never longer than the gather time. Plain numbers stand for /next callers here.
/// </summary>
public sealed class ClaimGatheringTests
{
    private readonly ConcurrentQueue<int> batches = new();
    private readonly GroupCommitQueue<int> queue;

    public ClaimGatheringTests()
    {
        queue = new(new BackgroundWork(), "claims", 100, 1, p => p.Count, batch =>
        {
            batches.Enqueue(batch.Count);
            return Task.CompletedTask;
        }, (_, _) => { });
    }

    [Fact]
    public async Task A_transaction_waits_for_as_many_callers_as_were_inside_at_once_and_takes_them_in_one_batch()
    {
        queue.GatherUpTo(() => 3, TimeSpan.FromSeconds(30));

        queue.Enqueue(1);
        Assert.False(await Eventually.HoldsAsync(() => Task.FromResult(!batches.IsEmpty), TimeSpan.FromMilliseconds(200)));
        queue.Enqueue(2);
        queue.Enqueue(3);

        var written = await WrittenAsync();
        Assert.Equal([3], written);
    }

    [Fact]
    public async Task A_transaction_goes_with_the_callers_it_has_once_the_gather_time_is_up()
    {
        queue.GatherUpTo(() => 3, TimeSpan.FromMilliseconds(100));

        queue.Enqueue(1);

        var written = await WrittenAsync();
        Assert.Equal([1], written);
    }

    [Fact]
    public async Task A_lone_caller_is_not_held_back()
    {
        queue.GatherUpTo(() => 1, TimeSpan.FromSeconds(30));

        queue.Enqueue(1);

        // Well inside the 30 s gather time (WrittenAsync waits 10 s at most): a lone caller's transaction starts at once.
        var written = await WrittenAsync();
        Assert.Equal([1], written);
    }

    /// <summary>The sizes of the batches written, once there is one.</summary>
    private async Task<int[]> WrittenAsync()
    {
        await Eventually.UntilAsync(() => !batches.IsEmpty, "the batch was written", seconds: 10);
        return batches.ToArray();
    }

    [Fact]
    public async Task The_callers_expected_are_the_most_that_were_inside_at_once_lately_and_a_quiet_second_forgets_them()
    {
        var peak = new CallerPeak();
        peak.Enter();
        peak.Enter();
        peak.Enter();
        peak.Leave();
        peak.Enter();
        Assert.Equal(3, peak.Peak);
        peak.Leave();
        peak.Leave();
        peak.Leave();

        await Eventually.UntilAsync(() => peak.Peak == 0, "the peak was forgotten", seconds: 10);
    }
}
