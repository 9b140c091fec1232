using Microsoft.Extensions.Logging;
using Queue.Core.Jobs;

namespace Queue.Core.Claims;

/// <summary>
/// New work straight into the claim-ahead buffer (docs/DESIGN.md "New work straight into the buffer"): a job whose
/// tenant has nothing in a busy filter's buffer and nothing waiting is reserved by its own creating transaction and
/// handed to that buffer after the commit, so its first item goes out at the next /next, by turn, instead of after a
/// claim transaction that the flood's refills were queued ahead of.
/// </summary>
public sealed partial class ClaimDispatcher : INewWorkIntake
{
    /// <summary>
    /// At most this share of <see cref="ClaimOptions.Prefetch"/> per job: a larger job is a flood of its own, and is
    /// served by claims, which keep the order within its tenant and the buffer's size.
    /// </summary>
    private const int IntakeShareOfPrefetch = 4;

    public TimeSpan Reservation => TimeSpan.FromSeconds(options.Value.ReservationSeconds);

    public string? Offer(long tenantId, IReadOnlyList<string> tasks, int items)
    {
        var o = options.Value;
        if (o.Prefetch == 0 || !turns.TakesTurns || items > o.Prefetch / IntakeShareOfPrefetch)
        {
            return null;
        }
        var at = clock.GetUtcNow();
        lock (gate)
        {
            return aheads.Intake(tenantId, tasks, items, at, o);
        }
    }

    public async Task AdoptAsync(string filter, NewJobItems job, long epoch, CancellationToken ct)
    {
        var items = job.Items.Select(i => new TakenItem(i.Id, job.JobId, job.TenantId, i.DocumentId, i.Task, 0, i.Token, job.ReservedUntil, Reservation: true)
        {
            TenantName = job.TenantName,
            DocumentName = i.DocumentName,
            ContentType = i.ContentType,
            Value = job.Value,
        }).ToList();
        // Fresh for the hold time from the creating transaction's clock, the one the reservation was written with.
        var freshUntil = job.ReservedAt.AddMilliseconds(options.Value.PrefetchHoldMilliseconds);
        ClaimAheadBuffer? adopted = null;
        lock (gate)
        {
            if (aheads.TryGet(filter, out var ahead))
            {
                foreach (var item in items)
                {
                    ahead.Add(item, freshUntil, epoch, byTenants: true);
                }
                // The tenant starts level with those served from the buffer now, as a claim that saw both would start it.
                turns.Backlogged([.. ahead.HeldTenants(), .. ahead.Waiting, job.TenantId]);
                adopted = ahead;
            }
        }
        if (adopted is not null)
        {
            await ServeParkedAsync(adopted, job.TenantId, ct);
            return;
        }
        // The filter was forgotten in the meantime: the items go back to the database at once. The job has committed,
        // so a give-back that fails must not fail its submission: the reservations then simply fall due.
        try
        {
            await leases.ReleaseAsync(items, ct);
        }
        catch (Exception ex) when (ex is MySqlConnector.MySqlException or IOException or InvalidOperationException)
        {
            LogIntakeGiveBackFailed(logger, ex, items.Count);
        }
    }

    /// <summary>
    /// Callers waiting on a claim transaction that began before this job committed would get their first chance at it
    /// only after that transaction and their next call: a flood's first claims took 30-40 ms, and the small job sent
    /// with them waited 55-70 ms for its first item while it sat in the buffer. So the new tenant's items go to them
    /// now, by turn (<see cref="ClaimAheadBuffer.ParkedShareOf"/>): the transaction brings the other tenants' items to
    /// the rest. The items the transaction took for the callers served here go back, as for callers who left. The claim
    /// epoch is read first, as before any answer from memory, so a cancel or block that committed since is never outrun.
    /// </summary>
    private async Task ServeParkedAsync(ClaimAheadBuffer ahead, long tenant, CancellationToken ct)
    {
        lock (gate)
        {
            if (!parked.TryGetValue(ahead, out var waiting) || !waiting.Exists(w => Volatile.Read(ref w.State) == Pending))
            {
                return;
            }
        }
        long epoch;
        try
        {
            epoch = await epochs.ReadAsync().WaitAsync(TimeSpan.FromMilliseconds(options.Value.DatabaseWaitMilliseconds), ct);
        }
        catch (Exception ex) when (ex is TimeoutException or MySqlConnector.MySqlException or IOException or InvalidOperationException)
        {
            // The job has committed, so this shortcut must not fail its submission: the waiting callers get the
            // transaction's answer, and the job's items are handed out from the buffer by turn.
            return;
        }
        var served = new List<(Waiter Waiter, TakenItem Item)>();
        lock (gate)
        {
            var now = clock.GetUtcNow().UtcDateTime;
            // New work signalled meanwhile does not matter here, as it does for an answer from memory: the transaction
            // the callers wait on serves the database's order to the rest of them.
            if (epoch > ahead.Epoch || !parked.TryGetValue(ahead, out var waiting))
            {
                return;
            }
            var pending = waiting.FindAll(w => Volatile.Read(ref w.State) == Pending);
            var share = ahead.ParkedShareOf(tenant, pending.Count, turns);
            // The longest waiting first; each caller's state is claimed before the item leaves the buffer, so a caller
            // who gives up meanwhile never takes it with him.
            foreach (var w in pending)
            {
                if (served.Count == share || !ahead.HoldsFreshOf(tenant, now))
                {
                    break;
                }
                if (Interlocked.CompareExchange(ref w.State, Assigned, Pending) == Pending)
                {
                    // Held and fresh, checked just above under this lock with the same clock reading, so never null.
                    served.Add((w, LeaseOut(ahead.TakeOf(tenant, turns)!, w.Request, now)));
                }
            }
        }
        foreach (var (w, item) in served)
        {
            CountClaimed(w.Request.Worker, [item]);
            w.Result.TrySetResult([item]);
        }
    }

    [LoggerMessage(EventId = 3010, Level = LogLevel.Warning, Message = "{Count} items of a new job whose claim-ahead filter was gone could not be given back; they come back when their reservations fall due")]
    private static partial void LogIntakeGiveBackFailed(ILogger logger, Exception exception, int count);
}
