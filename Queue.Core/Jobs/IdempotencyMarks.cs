using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Sql;

namespace Queue.Core.Jobs;

/// <summary>
/// The statements a keyed write adds to its own transaction, so that its Idempotency-Key record says what it made
/// (<see cref="IdempotencyVerdict.Landed"/>) should the request never answer. docs/DESIGN.md "Writes whose outcome is
/// not known yet".
/// </summary>
internal static class IdempotencyMarks
{
    public static MySqlBatchCommand Job(long tenantId, long jobId, IdempotencyRun key) =>
        BatchCommand.Of(IdempotencySql.MarkJob, ("@JobId", jobId), ("@TenantId", tenantId), ("@Key", key.Key), ("@Started", key.Started));

    public static MySqlBatchCommand Upload(long tenantId, long jobId, IdempotencyRun key, IReadOnlyList<CreatedDocument> documents) =>
        BatchCommand.Of(IdempotencySql.MarkUpload, ("@JobId", jobId), ("@DocumentId", documents[0].Id), ("@Documents", documents.Count),
            ("@TenantId", tenantId), ("@Key", key.Key), ("@Started", key.Started));
}
