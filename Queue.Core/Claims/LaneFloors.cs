using System.Collections.Concurrent;

namespace Queue.Core.Claims;

/// <summary>
/// Where a lane's next claim starts: past the highest item id this process's claims took from it. A claim takes a
/// lane's lowest claimable ids, so what lies below that id is leased, finished, not due yet or held by another
/// transaction. Without a floor every claim walked the lane's claim range from its first item, over the index entries
/// that its items' claims and completions delete-marked and that purge has not removed yet: a cost that grows with the
/// items consumed since purge last caught up (docs/DESIGN.md "Deep lanes"), so a big job drained slower than small ones,
/// and a long-open read view (a backup's snapshot) made every claim slower by the minute.
/// </summary>
/// <remarks>
/// An item below the floor can become claimable again: a fail's retry, an expired lease, a lease given back, an item
/// another process skipped and then released, an id committed after a higher one. This process's fails and give-backs
/// drop their lanes' floors at once (<see cref="Drop"/>); for the rest, a floor lasts at most <see cref="Rescan"/>,
/// after which one claim walks the lane from its start again. So such an item waits up to <see cref="Rescan"/> longer
/// than before, and none is ever left behind. Concurrent claims leave holes: a claim locks rows in several lanes and
/// takes only some, and another claim's floor may pass the rows it skipped as locked; so a lane that runs short above
/// its floor has it dropped at once, and the next claim walks it whole. Bounded: at most
/// <see cref="MaxLanes"/> lanes.
/// </remarks>
public sealed class LaneFloors
{
    public static readonly TimeSpan Rescan = TimeSpan.FromSeconds(1);

    public const int MaxLanes = 10_000;

    private readonly ConcurrentDictionary<(long JobId, string Task), (long Floor, DateTime Until)> lanes = new();

    /// <summary>
    /// About how many lanes have a floor. <c>ConcurrentDictionary.Count</c> takes every lock of the dictionary: asked
    /// for each new lane, in a drain of one-item jobs, it was 2 % of the Api's CPU.
    /// </summary>
    private int count;

    /// <summary>The id a claim of the lane starts after: 0 (the whole lane) when there is no floor or it has lapsed.</summary>
    public long Of(long jobId, string task, DateTime now) =>
        lanes.TryGetValue((jobId, task), out var f) && f.Until > now ? f.Floor : 0;

    /// <summary>
    /// After a claim committed: each lane's floor rises to the highest id it took there. A lane with no standing floor
    /// was walked from its start, so its new floor is good for <see cref="Rescan"/> from now.
    /// </summary>
    public void Advance(IEnumerable<TakenItem> taken, DateTime now)
    {
        foreach (var lane in taken.GroupBy(t => (t.JobId, t.Task)))
        {
            var top = lane.Max(t => t.Id);
            if (lanes.TryGetValue(lane.Key, out var f) && f.Until > now)
            {
                if (top > f.Floor)
                {
                    lanes.TryUpdate(lane.Key, (top, f.Until), f);
                }
                continue;
            }
            if (Volatile.Read(ref count) >= MaxLanes)
            {
                Prune(now);
                if (Volatile.Read(ref count) >= MaxLanes)
                {
                    continue;
                }
            }
            if (lanes.TryAdd(lane.Key, (top, now + Rescan)))
            {
                Interlocked.Increment(ref count);
            }
            else
            {
                lanes[lane.Key] = (top, now + Rescan);
            }
        }
    }

    /// <summary>
    /// The lane may have claimable items below its floor (a retry, a give-back, or it ran short above the floor): its
    /// next claim walks it whole.
    /// </summary>
    public void Drop(long jobId, string task)
    {
        if (lanes.TryRemove((jobId, task), out _))
        {
            Interlocked.Decrement(ref count);
        }
    }

    private void Prune(DateTime now)
    {
        foreach (var (lane, f) in lanes)
        {
            if (f.Until <= now)
            {
                if (lanes.TryRemove(KeyValuePair.Create(lane, f)))
                {
                    Interlocked.Decrement(ref count);
                }
            }
        }
    }
}
