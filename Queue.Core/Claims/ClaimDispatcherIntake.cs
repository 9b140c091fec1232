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
                return;
            }
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

    [LoggerMessage(EventId = 3010, Level = LogLevel.Warning, Message = "{Count} items of a new job whose claim-ahead filter was gone could not be given back; they come back when their reservations fall due")]
    private static partial void LogIntakeGiveBackFailed(ILogger logger, Exception exception, int count);
}
