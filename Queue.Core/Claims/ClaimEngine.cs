using Dapper;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Sql;

namespace Queue.Core.Claims;

/// <summary>
/// The claim transaction, and the only place that opens one: for each task filter's <see cref="ClaimOrder"/>, its
/// reserved items handed to their workers, then fresh items taken for its slots (<see cref="ItemTaker"/>), all in one
/// short READ COMMITTED transaction (<see cref="ClaimTransaction"/>) and one commit, retried whole on a deadlock. See
/// docs/DESIGN.md "Claims".
/// </summary>
public sealed class ClaimEngine
{
    private readonly MySqlDataSource db;
    private readonly TimeProvider clock;
    private readonly ItemTaker taker;
    private readonly LaneFloors floors;
    private long started;
    private int running;

    /// <param name="floors">Shared with <see cref="LeaseService"/>, whose retries and give-backs drop them; DI passes the one of the process.</param>
    public ClaimEngine(MySqlDataSource db, ILaneSelector selector, TimeProvider clock, ClaimCounters counters, LaneFloors? floors = null)
    {
        this.db = db;
        this.clock = clock;
        this.floors = floors ?? new LaneFloors();
        var held = new HeldLanes();
        taker = new ItemTaker(selector, counters, new ClaimClosing(held), held, this.floors);
    }

    /// <summary>Serves every order in one transaction; outcome k belongs to order k.</summary>
    public async Task<ClaimOutcome[]> ClaimAsync(IReadOnlyList<ClaimOrder> orders, CancellationToken ct)
    {
        var ticket = Interlocked.Increment(ref started);
        var alone = Interlocked.Increment(ref running) == 1;
        try
        {
            var (outcomes, taken, now) = await Retry.OnDeadlockAsync(async c =>
            {
                var now = clock.GetUtcNow().UtcDateTime;
                var outcomes = new ClaimOutcome[orders.Count];
                var taken = new List<TakenItem>();
                await using var conn = await db.OpenConnectionAsync(c);
                var tx = new ClaimTransaction(conn);
                try
                {
                    for (var i = 0; i < orders.Count; i++)
                    {
                        outcomes[i] = await FillAsync(tx, orders[i], now, taken, last: i == orders.Count - 1, c);
                    }
                    await tx.CommitAsync(c);
                }
                catch
                {
                    await tx.RollbackAsync();
                    throw;
                }
                return (outcomes, taken, now);
            }, ct);
            // Only a claim that ran alone in this process moves floors: beside another, the rows it skipped as locked
            // may be ones the other left untaken, claimable again below the new floor. The Api's claims run one at a
            // time (Claims:MaxConcurrentFlushes); concurrent ones (that setting raised, the benchmarks' raw claimers)
            // keep the floors they find, and other processes' holes are caught by ItemTaker's drop.
            if (alone && Volatile.Read(ref started) == ticket)
            {
                floors.Advance(taken, now);
            }
            return outcomes;
        }
        finally
        {
            Interlocked.Decrement(ref running);
        }
    }

    /// <summary>
    /// Hands out the order's reserved items; a handout whose reservation was lost meanwhile (blocked, cancelled or
    /// expired) has its fallback slot claimed afresh, ahead of the order's own slots.
    /// </summary>
    /// <param name="walked">Collects what the lane walks took (not the handouts, which earlier walks took), for the floors.</param>
    /// <param name="last">The transaction's last order: its closing batch carries the COMMIT.</param>
    private async Task<ClaimOutcome> FillAsync(ClaimTransaction tx, ClaimOrder order, DateTime now, List<TakenItem> walked, bool last,
        CancellationToken ct)
    {
        var confirmed = await ConfirmAsync(tx, order.Handouts, now, ct);
        var forHandouts = new TakenItem?[order.Handouts.Count];
        var slots = new List<ClaimSlot>(order.Handouts.Count + order.Slots.Count);
        var lost = new List<int>();
        for (var i = 0; i < order.Handouts.Count; i++)
        {
            var (item, lease) = order.Handouts[i];
            if (confirmed[i])
            {
                forHandouts[i] = item with { Attempt = item.Attempt + 1, Until = lease.Until, Reservation = false };
            }
            else
            {
                lost.Add(i);
                slots.Add(lease);
            }
        }
        slots.AddRange(order.Slots);
        if (slots.Count == 0)
        {
            return new ClaimOutcome(forHandouts, []);
        }
        var taken = await taker.TakeAsync(tx, order.Tasks, slots, now, last, ct);
        walked.AddRange(taken);
        for (var k = 0; k < lost.Count && k < taken.Count; k++)
        {
            forHandouts[lost[k]] = taken[k];
        }
        return new ClaimOutcome(forHandouts, taken.Count > lost.Count ? taken.GetRange(lost.Count, taken.Count - lost.Count) : []);
    }

    /// <summary>Turns reservations into workers' leases; false for each reservation that was lost meanwhile.</summary>
    private static async Task<bool[]> ConfirmAsync(ClaimTransaction tx, IReadOnlyList<Handout> handouts, DateTime now, CancellationToken ct)
    {
        var ok = new bool[handouts.Count];
        if (handouts.Count == 0)
        {
            return ok;
        }
        await using var batch = new MySqlBatch(tx.Connection);
        foreach (var (item, lease) in handouts)
        {
            var cmd = new MySqlBatchCommand(ClaimSql.ConfirmReservation);
            cmd.Parameters.AddWithValue("@Id", item.Id);
            cmd.Parameters.AddWithValue("@Token", item.Token);
            cmd.Parameters.AddWithValue("@Expires", lease.Until);
            cmd.Parameters.AddWithValue("@Worker", lease.Worker);
            cmd.Parameters.AddWithValue("@Now", now);
            batch.BatchCommands.Add(cmd);
        }
        tx.BeginWith(batch);
        await batch.ExecuteNonQueryAsync(ct);
        // MySqlBatch does not report rows per statement here, so read back which ones took: a confirmed item carries
        // our token and a worker's lease expiry.
        var rows = (await tx.Connection.QueryAsync<ConfirmedRow>(new CommandDefinition(ClaimSql.ConfirmedLeases,
            new { Ids = handouts.Select(h => h.Item.Id).ToList() }, cancellationToken: ct))).ToDictionary(r => r.Id);
        for (var i = 0; i < handouts.Count; i++)
        {
            ok[i] = rows.TryGetValue(handouts[i].Item.Id, out var r) && handouts[i].Item.HasToken(r.LeaseToken);
        }
        return ok;
    }

    private sealed record ConfirmedRow(long Id, byte[]? LeaseToken);
}
