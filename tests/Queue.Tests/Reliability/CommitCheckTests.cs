using Dapper;
using Queue.Core.Data;
using Queue.Core.Sql;
using Queue.Tests.Scheduler;

namespace Queue.Tests.Reliability;

/// <summary>
/// After a COMMIT got no answer, the check reads a row only that transaction wrote (docs/DESIGN.md "Writes whose outcome
/// is not known yet"). After a database crash InnoDB hands out again the ids of inserts it lost, so the row at the id
/// can be another write's: the 1-minute CI soak once answered 201 for a job that was not in the database.
/// </summary>
public sealed class CommitCheckTests
{
    [Fact]
    public async Task A_job_id_another_job_holds_after_a_crash_does_not_count_as_the_lost_commit_having_landed()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var tenant = await db.NewTenantAsync();
        long id;
        await using (var conn = await db.DataSource.OpenConnectionAsync())
        {
            // Another job at the id, as a submission after the restart takes the id the lost one had.
            id = await conn.ExecuteScalarAsync<long>("""
                INSERT INTO jobs (tenant_id, name, tasks, created_at, updated_at) VALUES (@Tenant, 'someone else''s', 'text', NOW(6), NOW(6));
                SELECT LAST_INSERT_ID();
                """, new { Tenant = tenant });
        }
        var lost = new IOException("the COMMIT's answer was lost");

        Assert.False(await CommitCheck.LandedAsync(db.DataSource, int.MaxValue, JobSql.JobLanded, new { Id = id, TenantId = tenant, Name = "mine" }, lost));
        Assert.True(await CommitCheck.LandedAsync(db.DataSource, int.MaxValue, JobSql.JobLanded, new { Id = id, TenantId = tenant, Name = "someone else's" }, lost));
    }

    [Fact]
    public async Task A_document_id_another_document_holds_after_a_crash_does_not_count_as_the_lost_upload_having_landed()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var tenant = await db.NewTenantAsync();
        long id;
        await using (var conn = await db.DataSource.OpenConnectionAsync())
        {
            id = await conn.ExecuteScalarAsync<long>("""
                INSERT INTO jobs (tenant_id, name, tasks, created_at, updated_at) VALUES (@Tenant, 'a job', 'text', NOW(6), NOW(6));
                INSERT INTO documents (job_id, tenant_id, name, content_type, size, sha256, created_at)
                  VALUES (LAST_INSERT_ID(), @Tenant, 'theirs.txt', 'text/plain', 1, UNHEX(REPEAT('00', 32)), NOW(6));
                SELECT LAST_INSERT_ID();
                """, new { Tenant = tenant });
        }
        var lost = new IOException("the COMMIT's answer was lost");

        Assert.False(await CommitCheck.LandedAsync(db.DataSource, int.MaxValue, JobSql.DocumentLanded, new { Id = id, Name = "mine.txt" }, lost));
        Assert.True(await CommitCheck.LandedAsync(db.DataSource, int.MaxValue, JobSql.DocumentLanded, new { Id = id, Name = "theirs.txt" }, lost));
    }
}
