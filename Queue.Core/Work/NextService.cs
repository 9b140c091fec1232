using System.Diagnostics;
using Queue.Core.Claims;
using Queue.Core.Fairness;

namespace Queue.Core.Work;

/// <summary>
/// A worker's <c>POST /next</c>, all of it but the HTTP: the worker seen, items claimed, and when none is claimable
/// the long-poll until work is signalled or the wait runs out; what was handed out goes to the fairness monitor. It
/// sits above Claims and Fairness (the tenant-fair policy is a lane selector of Claims), so neither depends on the other.
/// </summary>
public sealed class NextService(ClaimDispatcher claims, WorkSignal signal, WorkStats stats, FairnessMonitor fairness, NextReplays replays,
    Cluster.DatabaseClock databaseClock)
{
    /// <summary>
    /// Items for <paramref name="request"/>, waiting up to <paramref name="wait"/> for some; empty when none came.
    /// Throws <see cref="Data.ServiceBusyException"/> when the database is too busy to answer in time.
    /// </summary>
    /// <param name="requestId">The caller's id for this call, scoped by its key: a retry with it gets the same answer (<see cref="NextReplays"/>).</param>
    public Task<IReadOnlyList<TakenItem>> NextAsync(ClaimRequest request, TimeSpan wait, string? requestId, CancellationToken ct) =>
        requestId is null
            ? NextAsync(request, wait, ct)
            : replays.RunAsync(requestId, TimeSpan.FromSeconds(request.LeaseSeconds), () => NextAsync(request, wait, ct));

    public async Task<IReadOnlyList<TakenItem>> NextAsync(ClaimRequest request, TimeSpan wait, CancellationToken ct)
    {
        databaseClock.ThrowIfNotSynced();
        stats.Seen(request.Worker);
        var started = Stopwatch.GetTimestamp();
        while (true)
        {
            // Taken before looking, so an upload that lands between the look and the wait still wakes us.
            var observed = signal.Next;
            var items = await claims.ClaimAsync(request, ct);
            if (items.Count > 0)
            {
                fairness.Claimed(items);
                return items;
            }
            var remaining = wait - Stopwatch.GetElapsedTime(started);
            if (remaining <= TimeSpan.Zero)
            {
                return items;
            }
            await signal.WaitAsync(observed, remaining, ct);
        }
    }
}
