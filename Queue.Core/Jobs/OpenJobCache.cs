using System.Collections.Concurrent;

namespace Queue.Core.Jobs;

/// <summary>
/// Jobs this process recently found open for an upload, with their tenant and tasks, neither of which ever changes. An
/// upload to such a job skips the lookup before its body is read: a pooled connection and a round trip, which were about
/// a quarter of mariadbd's time per 1 KiB upload (docs/DESIGN.md "Grouped uploads"). The job may have been closed or
/// cancelled since; the upload's own transaction checks that under the job's row lock (<see cref="UploadBatcher"/>,
/// <see cref="LargeUploads"/>) and answers the same 409, only after the body was read. Only open jobs of the asking
/// tenant are remembered, so another tenant's id still gets its 404.
/// </summary>
public sealed class OpenJobCache(TimeProvider clock)
{
    /// <summary>How long a job found open is taken as open: the early 409 for a job closed meanwhile comes this much later at most.</summary>
    public static readonly TimeSpan Lifetime = TimeSpan.FromSeconds(10);

    private const int MaxEntries = 10_000;

    private readonly ConcurrentDictionary<long, (long TenantId, string[] Tasks, DateTimeOffset Until)> jobs = new();

    /// <summary>The job's tenant and tasks when it was found open lately; false when it must be looked up.</summary>
    public bool TryGet(long jobId, out long tenantId, out string[] tasks)
    {
        if (jobs.TryGetValue(jobId, out var hit) && hit.Until > clock.GetUtcNow())
        {
            (tenantId, tasks) = (hit.TenantId, hit.Tasks);
            return true;
        }
        (tenantId, tasks) = (0, []);
        return false;
    }

    public void Remember(long jobId, long tenantId, string[] tasks)
    {
        if (jobs.Count >= MaxEntries)
        {
            jobs.Clear();
        }
        jobs[jobId] = (tenantId, tasks, clock.GetUtcNow() + Lifetime);
    }

    /// <summary>The job was closed or cancelled here: this process answers its next upload early again.</summary>
    public void Forget(long jobId) => jobs.TryRemove(jobId, out _);
}
