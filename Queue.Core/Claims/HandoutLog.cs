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
public sealed class HandoutLog(MySqlDataSource db, TimeProvider clock, IOptions<ClaimOptions> options)
{
    private readonly Lock gate = new();
    private readonly Dictionary<long, Entry> pending = [];

    public void Add(TakenItem item, string? worker)
    {
        lock (gate)
        {
            pending[item.Id] = new Entry(item.Id, item.Token, item.Until, worker, Environment.TickCount64);
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
    public async Task FlushAsync(bool all, CancellationToken ct)
    {
        var o = options.Value;
        List<Entry> batch;
        lock (gate)
        {
            var before = Environment.TickCount64 - (all ? -1 : o.HandoutFlushMilliseconds);
            batch = pending.Values.Where(e => e.At < before).ToList();
            foreach (var e in batch)
            {
                pending.Remove(e.Id);
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
            var keepAfter = Environment.TickCount64 - (o.ReservationSeconds * 1000L);
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

    private sealed record Entry(long Id, byte[] Token, DateTime Until, string? Worker, long At);
}
