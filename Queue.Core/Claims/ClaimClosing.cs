using System.Collections.Concurrent;
using Dapper;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Jobs;
using Queue.Core.Sql;

namespace Queue.Core.Claims;

/// <summary>
/// The end of a claim's walk, inside its transaction: the last writes, the lanes it may have emptied hidden until their
/// next item falls due (or removed when nothing is left), and the taken items' documents and tenant names for the
/// answer. Lanes the claim emptied get their hint here, so the next claims skip them by their ordering row instead
/// of probing their items.
/// </summary>
internal sealed class ClaimClosing(HeldLanes held)
{
    private readonly ConcurrentDictionary<long, string> tenantNames = new();

    /// <summary>
    /// One round trip: the last writes, then the lanes locked with SKIP LOCKED, the earliest due time of each lane's
    /// active items, and the documents. A second round trip writes the hints. SKIP LOCKED: an upload's
    /// LEAST(available_at, now) is never lost under our hint, and a claim never waits for a lane a rewrite or an upload
    /// holds (those set the hint themselves). The due times are read after this claim's writes, so its own leases count.
    /// Each kind is one statement for up to <see cref="LaneCommand.MaxLanes"/> lanes, and one for all the documents: a
    /// claim of eight one-item jobs used to send 32 statements here and 8 for the hints (docs/DESIGN.md "Claim and
    /// completion round trips"). The claim's last closing (<paramref name="last"/>) ends its last batch with the COMMIT.
    /// </summary>
    public async Task CloseAsync(ClaimTransaction tx, ClaimWrites writes, List<Lane> emptied, List<TakenItem> taken, DateTime now, bool last,
        CancellationToken ct)
    {
        var lanes = emptied.Select(l => (l.JobId, l.Task)).Distinct().ToList();
        var documents = taken.Select(t => t.DocumentId).Distinct().ToList();
        if (lanes.Count == 0 && documents.Count == 0)
        {
            await tx.WriteAsync(writes, last, ct);
            return;
        }
        var (hints, docs) = await ReadLanesAndDocumentsAsync(tx, writes, lanes, documents, now, ct);
        var hinted = hints.Where(h => h.NextDue is not null).ToList();
        var removed = hints.Where(h => h.NextDue is null).ToList();
        if (hints.Count > 0)
        {
            await using var batch = new MySqlBatch(tx.Connection);
            foreach (var chunk in hinted.Chunk(LaneCommand.MaxLanes))
            {
                var cmd = LaneCommand.Batch(ClaimSql.SetLaneHints, chunk.Select(h => (h.JobId, h.Task)).ToList());
                cmd.Parameters.AddNumbered("@a", chunk.Select(h => h.NextDue!.Value));
                batch.BatchCommands.Add(cmd);
            }
            foreach (var chunk in removed.Chunk(LaneCommand.MaxLanes))
            {
                batch.BatchCommands.Add(LaneCommand.Batch(ClaimSql.DeleteLanes, chunk.Select(h => (h.JobId, h.Task)).ToList()));
            }
            await tx.RunAsync(batch, commit: last, ct);
        }
        foreach (var t in taken)
        {
            if (docs.TryGetValue(t.DocumentId, out var d))
            {
                t.DocumentName = d.Name;
                t.ContentType = d.ContentType;
            }
            t.TenantName = await TenantNameAsync(tx.Connection, t.TenantId, ct);
        }
    }

    private async Task<(List<(long JobId, string Task, DateTime? NextDue)> Hints, Dictionary<long, DocRow> Docs)> ReadLanesAndDocumentsAsync(
        ClaimTransaction tx, ClaimWrites writes, List<(long JobId, string Task)> lanes, List<long> documents, DateTime now, CancellationToken ct)
    {
        var hints = new List<(long JobId, string Task, DateTime? NextDue)>();
        var docs = new Dictionary<long, DocRow>();
        await using var batch = new MySqlBatch(tx.Connection);
        writes.MoveTo(batch);
        var chunks = lanes.Chunk(LaneCommand.MaxLanes).ToList();
        foreach (var chunk in chunks)
        {
            batch.BatchCommands.Add(LaneCommand.Batch(ClaimSql.LockLanes, chunk));
            batch.BatchCommands.Add(LaneCommand.Batch(ClaimSql.LanesNextDue, chunk));
        }
        if (documents.Count > 0)
        {
            var cmd = new MySqlBatchCommand(ClaimSql.DocumentsByIds(documents.Count));
            cmd.Parameters.AddNumbered("@d", documents);
            batch.BatchCommands.Add(cmd);
        }
        await using var reader = await tx.ReadAsync(batch, ct);
        var results = new BatchResults(reader);
        if (lanes.Count > 0)
        {
            // Task names are lower case by validation, so they come back exactly as the walk read them.
            var locked = new HashSet<(long, string)>();
            var due = new Dictionary<(long, string), DateTime>();
            foreach (var _ in chunks)
            {
                await results.NextAsync(ct);
                while (await reader.ReadAsync(ct))
                {
                    locked.Add((reader.GetInt64(0), reader.GetString(1)));
                }
                await results.NextAsync(ct);
                while (await reader.ReadAsync(ct))
                {
                    due[(reader.GetInt64(0), reader.GetString(1))] = reader.GetDateTime(2);
                }
            }
            foreach (var (jobId, task) in lanes)
            {
                DateTime? next = due.TryGetValue((jobId, task), out var d) ? d : null;
                // A lane with an item due now is claimable as it stands: nothing to write.
                if (next is not null && next <= now)
                {
                    continue;
                }
                if (locked.Contains((jobId, task)))
                {
                    hints.Add((jobId, task, next));
                }
                else
                {
                    // Held by another transaction, which sets the hint itself if it changes the lane; until then (or
                    // until its next item falls due) this process's claims need not probe it again.
                    held.Add(jobId, task, next, now);
                }
            }
        }
        if (documents.Count > 0)
        {
            await results.NextAsync(ct);
            while (await reader.ReadAsync(ct))
            {
                docs[reader.GetInt64(0)] = new DocRow(reader.GetInt64(0), reader.GetString(1), reader.GetString(2));
            }
        }
        return (hints, docs);
    }

    private async ValueTask<string> TenantNameAsync(MySqlConnection conn, long tenantId, CancellationToken ct)
    {
        if (tenantNames.TryGetValue(tenantId, out var name))
        {
            return name;
        }
        // Tenant names never change, so this cache needs no expiry; it is bounded as TenantCache is. Not TenantCache
        // itself: that reads on a connection of its own, and a claim holding its transaction's must not wait for another.
        name = await conn.ExecuteScalarAsync<string>(new CommandDefinition(ClaimSql.TenantNameById, new { Id = tenantId }, cancellationToken: ct)) ?? "";
        if (tenantNames.Count > TenantCache.MaxTenants)
        {
            tenantNames.Clear();
        }
        tenantNames[tenantId] = name;
        return name;
    }

    private sealed record DocRow(long Id, string Name, string ContentType);
}
