using Microsoft.Extensions.Options;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Sql;

namespace Queue.Core.Claims;

/// <summary>
/// Leases that /next handed out straight from the claim-ahead buffer, written down after the answer in one statement
/// per flush (<see cref="ClaimSql.WriteHandouts"/>), so a worker served from memory waits for no transaction.
/// </summary>
/// <remarks>
/// Until its lease is written, such an item is still a reservation in its row: held by the same token, so the worker can
/// complete, fail, extend it and read its document, and a finish counts its attempt (<see cref="ClaimSql.AttemptOfHandout"/>).
/// What this gives up: if the process dies before a flush, the row keeps the reservation's expiry
/// (<see cref="ClaimOptions.ReservationSeconds"/>), so the item is handed out again after seconds rather than after the
/// worker's lease, as at-least-once delivery allows. docs/DESIGN.md "Handouts from memory".
/// </remarks>
public sealed class HandoutLog(MySqlDataSource db, TimeProvider clock, IOptions<ClaimOptions> options) : IDisposable
{
    private readonly Lock gate = new();
    private readonly Dictionary<long, Entry> pending = [];
    private readonly SemaphoreSlim writing = new(1, 1);

    /// <summary>The earliest reservation lapse among the handouts being written now; MaxValue when none is.</summary>
    private DateTime writingFirstLapse = DateTime.MaxValue;

    /// <summary>Nothing left to write and no write under way: what the log does to rows has all been done.</summary>
    public bool Idle
    {
        get
        {
            lock (gate)
            {
                return pending.Count == 0 && writingFirstLapse == DateTime.MaxValue;
            }
        }
    }

    /// <param name="reservedUntil">The reservation's expiry in the row: past it, another claim may take the row.</param>
    public void Add(TakenItem item, string? worker, DateTime reservedUntil)
    {
        lock (gate)
        {
            pending[item.Id] = new Entry(item.Id, item.Token, item.Until, worker, clock.GetUtcNow(), reservedUntil);
        }
    }

    /// <summary>
    /// These items' leases were finished or extended by their own statements: nothing is left to write. A worker
    /// that completes within <see cref="ClaimOptions.HandoutFlushMilliseconds"/> so costs no lease write at all.
    /// </summary>
    public void Finished(IEnumerable<long> ids)
    {
        lock (gate)
        {
            if (pending.Count == 0)
            {
                return;
            }
            foreach (var id in ids)
            {
                pending.Remove(id);
            }
        }
    }

    /// <summary>
    /// Writes the handouts at least <see cref="ClaimOptions.HandoutFlushMilliseconds"/> old (<paramref name="all"/>:
    /// every one). On failure they are kept for the next flush (the write is idempotent), except those older than a
    /// reservation, whose rows may already belong to another claim.
    /// </summary>
    public Task FlushAsync(bool all, CancellationToken ct)
    {
        var before = all ? DateTimeOffset.MaxValue : clock.GetUtcNow().AddMilliseconds(-options.Value.HandoutFlushMilliseconds);
        return FlushWhereAsync(e => e.At <= before, ct);
    }

    /// <summary>
    /// Writes the handouts whose reservation in the row lapses before <paramref name="until"/>. A claim transaction of
    /// this process calls it first, with its own time: a handout whose write the timer has not made yet (a stall, a
    /// clock that jumped) is then a lease before that claim could take its row as an expired reservation. Costs
    /// nothing when, as normally, every handout is written long before its reservation lapses.
    /// </summary>
    public Task FlushExpiringAsync(DateTime until, CancellationToken ct)
    {
        lock (gate)
        {
            // A write already under way (the timer's) may hold such a handout: wait for it too, or this claim could
            // take the row before that write lands.
            if (writingFirstLapse > until && (pending.Count == 0 || !pending.Values.Any(e => e.ReservedUntil <= until)))
            {
                return Task.CompletedTask;
            }
        }
        return FlushWhereAsync(e => e.ReservedUntil <= until, ct);
    }

    /// <summary>One write at a time, so a claim's <see cref="FlushExpiringAsync"/> also waits for the timer's write.</summary>
    private async Task FlushWhereAsync(Func<Entry, bool> due, CancellationToken ct)
    {
        await writing.WaitAsync(ct);
        try
        {
            await WriteWhereAsync(due, ct);
        }
        finally
        {
            lock (gate)
            {
                writingFirstLapse = DateTime.MaxValue;
            }
            writing.Release();
        }
    }

    private async Task WriteWhereAsync(Func<Entry, bool> due, CancellationToken ct)
    {
        var o = options.Value;
        List<Entry> batch;
        lock (gate)
        {
            batch = pending.Values.Where(due).ToList();
            foreach (var e in batch)
            {
                pending.Remove(e.Id);
            }
            if (batch.Count > 0)
            {
                writingFirstLapse = batch.Min(e => e.ReservedUntil);
            }
        }
        if (batch.Count == 0)
        {
            return;
        }
        try
        {
            var now = clock.GetUtcNow().UtcDateTime;
            await Retry.OnDeadlockAsync(async c =>
            {
                await using var conn = await db.OpenConnectionAsync(c);
                await using var writes = new MySqlBatch(conn);
                foreach (var chunk in batch.Chunk(SqlRows.CaseRowsPerStatement))
                {
                    writes.BatchCommands.Add(BatchCommand.Rows(ClaimSql.WriteHandouts(chunk.Length), chunk, now,
                        ("@i", e => e.Id), ("@t", e => e.Token), ("@u", e => e.Until), ("@w", e => e.Worker)));
                }
                await writes.ExecuteNonQueryAsync(c);
                return true;
            }, ct);
        }
        catch
        {
            var keepAfter = clock.GetUtcNow().AddSeconds(-o.ReservationSeconds);
            lock (gate)
            {
                foreach (var e in batch.Where(e => e.At > keepAfter))
                {
                    pending.TryAdd(e.Id, e);
                }
            }
            throw;
        }
    }

    public void Dispose() => writing.Dispose();

    private sealed record Entry(long Id, byte[] Token, DateTime Until, string? Worker, DateTimeOffset At, DateTime ReservedUntil);
}
