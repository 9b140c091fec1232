using System.Collections.Concurrent;

namespace Queue.Core.Claims;

/// <summary>
/// Lanes a claim found empty but could not hint, because another transaction held the lane row for long: a rewrite
/// holds every lane it moves until it commits, for seconds at 100k jobs. Without this memory every claim of this process
/// probes such lanes again, round after round: with a few hundred of them at the head of the ordering while a rewrite
/// runs, that was most of a claim's statements. A claim skips them (as lanes already visited) for at most
/// <see cref="Hold"/>, or until their next item falls due, whichever comes first; then a claim probes them again and
/// writes their hint.
/// </summary>
/// <remarks>
/// Only a lane found held twice, at least <see cref="LongHolder"/> apart, is skipped: another claim holds a lane for a
/// transaction's milliseconds, and the next claim's probe then writes the hint, which takes the lane out of every walk;
/// skipping it instead would leave it in every walk for the whole hold. The price of the memory: an item that becomes
/// claimable in a skipped lane meanwhile (an upload, a fail's retry, a release) waits up to <see cref="Hold"/> longer in
/// this process. Bounded: at most <see cref="MaxLanes"/> lanes.
/// </remarks>
public sealed class HeldLanes
{
    public static readonly TimeSpan Hold = TimeSpan.FromSeconds(1);

    public static readonly TimeSpan LongHolder = TimeSpan.FromMilliseconds(100);

    public const int MaxLanes = 10_000;

    private readonly ConcurrentDictionary<(long JobId, string Task), (DateTime FirstHeld, DateTime Until)> lanes = new();

    /// <summary>The lane is empty until <paramref name="due"/> (null: no active item left), but its hint could not be written.</summary>
    public void Add(long jobId, string task, DateTime? due, DateTime now)
    {
        if (lanes.Count >= MaxLanes)
        {
            Prune(now);
            if (lanes.Count >= MaxLanes)
            {
                return;
            }
        }
        var key = (jobId, task);
        if (!lanes.TryGetValue(key, out var seen) || seen.FirstHeld < now - Hold)
        {
            lanes[key] = (now, DateTime.MinValue);
        }
        else if (seen.FirstHeld <= now - LongHolder)
        {
            var until = now + Hold;
            lanes[key] = (seen.FirstHeld, due is { } d && d < until ? d : until);
        }
    }

    /// <summary>Marks the lanes still held as visited, so the walk neither probes them nor counts them as found.</summary>
    public void SkipIn(HashSet<(long JobId, string Task)> visited, DateTime now)
    {
        if (lanes.IsEmpty)
        {
            return;
        }
        foreach (var (lane, seen) in lanes)
        {
            if (seen.Until > now)
            {
                visited.Add(lane);
            }
            else if (seen.FirstHeld < now - Hold)
            {
                lanes.TryRemove(KeyValuePair.Create(lane, seen));
            }
        }
    }

    private void Prune(DateTime now)
    {
        foreach (var (lane, seen) in lanes)
        {
            if (seen.Until <= now && seen.FirstHeld < now - Hold)
            {
                lanes.TryRemove(KeyValuePair.Create(lane, seen));
            }
        }
    }
}
