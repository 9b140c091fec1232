namespace Queue.Core.Claims;

/// <summary>
/// The wake loop's reading of the newest item id (docs/DESIGN.md "Scaling out": wake-ups across processes). New items
/// that another process committed are new work this process's claim-ahead buffer does not know: they move
/// <see cref="WorkSignal.Generation"/>, so the next /next goes to a claim transaction and that submission takes its turn
/// within one look instead of waiting behind the buffer. This process's own new items only wake its workers: a second
/// signal would send the buffer to a transaction that finds nothing new (it did, once per small job, 40 ms each under
/// a flood).
/// </summary>
internal sealed class NewItemWatch(WorkSignal signal)
{
    private long newest = -1;
    private long local = -1;

    /// <summary>
    /// One look: <paramref name="newestItemId"/> read after <paramref name="before"/>, this process's
    /// <see cref="WorkSignal.Local"/>. The new items are taken for this process's own when one of its submissions
    /// signalled since the last look, or when none is newer than the items it created straight into its buffer
    /// (<see cref="WorkSignal.HeldThrough"/>, said before their COMMIT, so a look between that COMMIT and the
    /// submission's signal knows them too). Another process's items that landed in the same interval are then seen by
    /// the buffer's next refill, within its runway.
    /// </summary>
    public void Saw(long before, long newestItemId)
    {
        if (newestItemId != newest && newest >= 0)
        {
            if (before == local && newestItemId > signal.HeldThrough)
            {
                signal.Notify();
                // Its own signal is not a submission of this process: the next look must not take it for one.
                before = signal.Local;
            }
            else
            {
                signal.Wake();
            }
        }
        newest = newestItemId;
        local = before;
    }
}
