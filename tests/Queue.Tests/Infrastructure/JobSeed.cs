using System.Security.Cryptography;
using Dapper;
using Microsoft.Extensions.Options;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Jobs;
using Queue.Core.Ordering;

namespace Queue.Tests.Infrastructure;

/// <summary>
/// Puts a job into the real schema the way a submission does (job, documents, one item per document and task, lanes
/// placed by <see cref="OrderingLanes"/>), without the customer API: the one seeding of the Admin and the Work tests.
/// </summary>
internal static class JobSeed
{
    /// <param name="document">Document d's name and content, given the job's id.</param>
    public static async Task<long> InsertAsync(MySqlDataSource db, TimeProvider clock, long tenantId, string name, int documents, string[] tasks,
        bool closed, Func<long, int, (string Name, byte[] Content)> document)
    {
        var now = clock.GetUtcNow().UtcDateTime;
        var lanes = new OrderingLanes(new OrderingCalendar(clock, Options.Create(new OrderingOptions())), clock);
        await using var conn = await db.OpenConnectionAsync();
        await using var tx = await conn.BeginReadCommittedAsync(default);
        var jobId = await conn.ExecuteScalarAsync<long>("""
            INSERT INTO jobs (tenant_id, name, state, tasks, documents, items_total, created_at, closed_at, updated_at)
            VALUES (@TenantId, @Name, @State, @Tasks, @Documents, @Total, @Now, @Closed, @Now);
            SELECT LAST_INSERT_ID();
            """, new { TenantId = tenantId, Name = name, State = closed ? JobStates.Closed : JobStates.Open, Tasks = string.Join(',', tasks),
                Documents = documents, Total = documents * tasks.Length, Now = now, Closed = closed ? now : (DateTime?)null }, tx);
        for (var d = 0; d < documents; d++)
        {
            var (docName, content) = document(jobId, d);
            var docId = await conn.ExecuteScalarAsync<long>("""
                INSERT INTO documents (job_id, tenant_id, name, content_type, size, sha256, created_at)
                VALUES (@JobId, @TenantId, @Name, 'text/plain', @Size, @Sha, @Now);
                SELECT LAST_INSERT_ID();
                """, new { JobId = jobId, TenantId = tenantId, Name = docName, Size = content.Length, Sha = SHA256.HashData(content), Now = now }, tx);
            await conn.ExecuteAsync("INSERT INTO document_content (document_id, content) VALUES (@Id, @Content)", new { Id = docId, Content = content }, tx);
            foreach (var task in tasks)
            {
                await conn.ExecuteAsync("""
                    INSERT INTO items (job_id, document_id, task, state, due_at, created_at, updated_at)
                    VALUES (@JobId, @DocId, @Task, 0, @Now, @Now, @Now)
                    """, new { JobId = jobId, DocId = docId, Task = task, Now = now }, tx);
            }
        }
        await lanes.PlaceAsync(conn, tx, jobId, tasks, default);
        await tx.CommitAsync();
        return jobId;
    }
}
