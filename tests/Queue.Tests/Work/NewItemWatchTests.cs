using Queue.Core;
using Queue.Core.Claims;

namespace Queue.Tests.Work;

/// <summary>
/// The wake loop's look at the newest item id: another process's new items send the claim-ahead buffer to a claim
/// transaction (a new <see cref="WorkSignal.Generation"/>); this process's own only wake its workers.
/// </summary>
public sealed class NewItemWatchTests
{
    [Fact]
    public void New_items_of_another_process_move_the_generation()
    {
        var (signal, watch) = Watching(newest: 100);

        watch.Saw(signal.Local, 110);

        Assert.Equal(1, signal.Generation);
    }

    [Fact]
    public void New_items_after_this_process_signalled_its_own_submission_only_wake_the_workers()
    {
        var (signal, watch) = Watching(newest: 100);
        signal.NotifyHeld();

        LookWakesWorkersOnly(signal, watch, 110);
    }

    [Fact]
    public void New_items_created_straight_into_this_processs_buffer_and_seen_before_their_own_signal_do_not_move_the_generation()
    {
        var (signal, watch) = Watching(newest: 100);

        // Said before the creating transaction's COMMIT; the look comes between that COMMIT and NotifyHeld.
        signal.Holding(110);

        LookWakesWorkersOnly(signal, watch, 110);
    }

    [Fact]
    public void Items_newer_than_those_this_process_holds_move_the_generation()
    {
        var (signal, watch) = Watching(newest: 100);

        signal.Holding(110);
        watch.Saw(signal.Local, 111);

        Assert.Equal(1, signal.Generation);
    }

    [Fact]
    public void What_is_held_only_grows()
    {
        var signal = new WorkSignal();

        signal.Holding(110);
        signal.Holding(105);

        Assert.Equal(110, signal.HeldThrough);
    }

    /// <summary>A look that sees <paramref name="newest"/>: the workers are woken, the generation stays.</summary>
    private static void LookWakesWorkersOnly(WorkSignal signal, NewItemWatch watch, long newest)
    {
        var woken = signal.Next;
        watch.Saw(signal.Local, newest);

        Assert.Equal(0, signal.Generation);
        Assert.True(woken.IsCompleted, "the workers are woken");
    }

    private static (WorkSignal Signal, NewItemWatch Watch) Watching(long newest)
    {
        var signal = new WorkSignal();
        var watch = new NewItemWatch(signal);
        watch.Saw(signal.Local, newest);
        Assert.Equal(0, signal.Generation);
        return (signal, watch);
    }
}
