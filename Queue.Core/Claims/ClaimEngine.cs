using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Sql;

namespace Queue.Core.Claims;

/// <summary>
/// The claim transaction, and the only place that opens one: for each task filter's <see cref="ClaimOrder"/>, fresh
/// items taken for its slots (<see cref="ItemTaker"/>), all in one
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

    /// <summary>Serves every order in one transaction; outcome k, the items taken in slot order (fewer when the queue ran dry), belongs to order k.</summary>
    public async Task<IReadOnlyList<TakenItem>[]> ClaimAsync(IReadOnlyList<ClaimOrder> orders, CancellationToken ct)
    {
        var ticket = Interlocked.Increment(ref started);
        var alone = Interlocked.Increment(ref running) == 1;
        try
        {
            var (outcomes, taken, now) = await Retry.OnDeadlockAsync(async c =>
            {
                var now = clock.GetUtcNow().UtcDateTime;
                var outcomes = new IReadOnlyList<TakenItem>[orders.Count];
                var taken = new List<TakenItem>();
                await using var conn = await db.OpenConnectionAsync(c);
                var session = conn.ServerThread;
                var tx = new ClaimTransaction(conn);
                try
                {
                    for (var i = 0; i < orders.Count; i++)
                    {
                        outcomes[i] = await FillAsync(tx, orders[i], now, taken, last: i == orders.Count - 1, c);
                    }
                    await tx.CommitAsync(c);
                }
                catch (Exception ex)
                {
                    await tx.RollbackAsync();
                    if (tx.CommitSent && taken.Count > 0 && MayHaveCommitted(ex)
                        && await CommitCheck.LandedAsync(db, session, ClaimSql.TakenWith, new { taken[0].Id, taken[0].Token }, ex))
                    {
                        throw new ClaimLandedUnansweredException(taken, ex);
                    }
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
    /// A COMMIT that got no answer, or an error the server did not send (a cut connection): the claim may have
    /// committed. A deadlock or lock wait timeout was the server's answer, and rolled it back.
    /// </summary>
    private static bool MayHaveCommitted(Exception ex) => ex is not MySqlException m || !Retry.IsTransient(m);

    /// <param name="walked">Collects what the lane walks took, for the floors.</param>
    /// <param name="last">The transaction's last order: its closing batch carries the COMMIT.</param>
    private async Task<IReadOnlyList<TakenItem>> FillAsync(ClaimTransaction tx, ClaimOrder order, DateTime now, List<TakenItem> walked, bool last,
        CancellationToken ct)
    {
        if (order.Slots.Count == 0)
        {
            return [];
        }
        return await taker.TakeAsync(tx, order, now, last, walked, ct);
    }
}

/// <summary>
/// A claim committed but its COMMIT's answer was lost (<see cref="CommitCheck"/>): no caller was told about
/// <see cref="Items"/>, so the dispatcher gives them back at once rather than leave them leased to nobody until their
/// leases expire (as failed attempts); the callers get a 503 and call again. docs/DESIGN.md "Writes whose outcome is not
/// known yet".
/// </summary>
public sealed class ClaimLandedUnansweredException(IReadOnlyList<TakenItem> items, Exception inner)
    : ServiceBusyException("the claim's commit got no answer; its items were given back", inner)
{
    public IReadOnlyList<TakenItem> Items { get; } = items;
}
