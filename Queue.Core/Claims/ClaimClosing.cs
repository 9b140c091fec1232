using System.Collections.Concurrent;
using Dapper;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Sql;

namespace Queue.Core.Claims;

/// <summary>
/// The end of a claim's walk, inside its transaction: the last writes, the lanes it may have emptied hidden until their
/// next item falls due (or removed when nothing is left), and the taken items' documents and tenant names for the
/// answer. Lanes the claim emptied get their hint here, so the next claims skip them inside the index instead of
/// probing them.
/// </summary>
internal sealed class ClaimClosing(HeldLanes held)
{
    private readonly ConcurrentDictionary<long, string> tenantNames = new();

    /// <summary>
    /// One round trip: the last writes, then for each lane the lane row locked with SKIP LOCKED and the earliest due
    /// time of its active items, then the documents. A second round trip writes the hints. SKIP LOCKED: an upload's
    /// LEAST(available_at, now) is never lost under our hint, and a claim never waits for a lane a rewrite or an upload
    /// holds (those set the hint themselves). The due times are read after this claim's writes, so its own leases
    /// count. One statement per lane or document: batch commands carry no list parameters.
    /// </summary>
    public async Task CloseAsync(MySqlConnection conn, MySqlTransaction tx, List<MySqlBatchCommand> writes, List<Lane> emptied,
        List<TakenItem> taken, DateTime now, CancellationToken ct)
    {
        var lanes = emptied.Select(l => (l.JobId, l.Task)).Distinct().ToList();
        var documents = taken.Select(t => t.DocumentId).Distinct().ToList();
        if (lanes.Count == 0 && documents.Count == 0)
        {
            await ItemTaker.WriteAsync(conn, tx, writes, ct);
            return;
        }
        var (hints, docs) = await ReadLanesAndDocumentsAsync(conn, tx, writes, lanes, documents, now, ct);
        if (hints.Count > 0)
        {
            await using var batch = new MySqlBatch(conn, tx);
            foreach (var (jobId, task, due) in hints)
            {
                var cmd = LaneCommand(due is null ? ClaimSql.DeleteLane : ClaimSql.SetLaneHint, jobId, task);
                if (due is not null)
                {
                    cmd.Parameters.AddWithValue("@At", due.Value);
                }
                batch.BatchCommands.Add(cmd);
            }
            await batch.ExecuteNonQueryAsync(ct);
        }
        foreach (var t in taken)
        {
            if (docs.TryGetValue(t.DocumentId, out var d))
            {
                t.DocumentName = d.Name;
                t.ContentType = d.ContentType;
            }
            t.TenantName = await TenantNameAsync(conn, tx, t.TenantId, ct);
        }
    }

    private async Task<(List<(long JobId, string Task, DateTime? NextDue)> Hints, Dictionary<long, DocRow> Docs)> ReadLanesAndDocumentsAsync(
        MySqlConnection conn, MySqlTransaction tx, List<MySqlBatchCommand> writes, List<(long JobId, string Task)> lanes, List<long> documents,
        DateTime now, CancellationToken ct)
    {
        var hints = new List<(long JobId, string Task, DateTime? NextDue)>();
        var docs = new Dictionary<long, DocRow>();
        await using var batch = new MySqlBatch(conn, tx);
        foreach (var w in writes)
        {
            batch.BatchCommands.Add(w);
        }
        writes.Clear();
        foreach (var (jobId, task) in lanes)
        {
            batch.BatchCommands.Add(LaneCommand(ClaimSql.LockLane, jobId, task));
            batch.BatchCommands.Add(LaneCommand(ClaimSql.LaneNextDue, jobId, task));
        }
        foreach (var id in documents)
        {
            var cmd = new MySqlBatchCommand(ClaimSql.DocumentById);
            cmd.Parameters.AddWithValue("@Id", id);
            batch.BatchCommands.Add(cmd);
        }
        await using var reader = await batch.ExecuteReaderAsync(ct);
        var results = new BatchResults(reader);
        foreach (var (jobId, task) in lanes)
        {
            var locked = await results.NextRowAsync(ct);
            while (await reader.ReadAsync(ct))
            {
            }
            DateTime? due = await results.NextRowAsync(ct) && !await reader.IsDBNullAsync(0, ct) ? reader.GetDateTime(0) : null;
            // A lane with an item due now is claimable as it stands: nothing to write.
            if (due is null || due > now)
            {
                if (locked)
                {
                    hints.Add((jobId, task, due));
                }
                else
                {
                    // Held by another transaction, which sets the hint itself if it changes the lane; until then (or
                    // until its next item falls due) this process's claims need not probe it again.
                    held.Add(jobId, task, due, now);
                }
            }
        }
        foreach (var id in documents)
        {
            if (await results.NextRowAsync(ct))
            {
                docs[id] = new DocRow(reader.GetInt64(0), reader.GetString(1), reader.GetString(2));
            }
        }
        return (hints, docs);
    }

    private static MySqlBatchCommand LaneCommand(string sql, long jobId, string task)
    {
        var cmd = new MySqlBatchCommand(sql);
        cmd.Parameters.AddWithValue("@JobId", jobId);
        cmd.Parameters.AddWithValue("@Task", task);
        return cmd;
    }

    private async ValueTask<string> TenantNameAsync(MySqlConnection conn, MySqlTransaction tx, long tenantId, CancellationToken ct)
    {
        if (tenantNames.TryGetValue(tenantId, out var name))
        {
            return name;
        }
        // Tenant names never change, so this cache needs no expiry.
        name = await conn.ExecuteScalarAsync<string>(new CommandDefinition(ClaimSql.TenantNameById, new { Id = tenantId }, tx, cancellationToken: ct)) ?? "";
        tenantNames[tenantId] = name;
        return name;
    }

    private sealed record DocRow(long Id, string Name, string ContentType);
}
