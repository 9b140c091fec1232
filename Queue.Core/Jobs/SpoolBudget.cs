using Microsoft.Extensions.Options;

namespace Queue.Core.Jobs;

/// <summary>
/// The bytes this process has in upload spool files (<see cref="LargeUploads"/>), bounded by
/// <see cref="JobOptions.MaxSpoolBytes"/>. Each upload is bounded by the request limit, but uploads at once were not: a
/// few hundred slow clients could fill the disk the database may share. Past the bound an upload is answered 503 with
/// Retry-After while it is read, and its file is deleted: a retry later finds room as other uploads land.
/// </summary>
public sealed class SpoolBudget(IOptions<JobOptions> options)
{
    private long used;

    /// <summary>Bytes spooled now, in files not yet closed.</summary>
    public long Used => Interlocked.Read(ref used);

    /// <summary>Takes <paramref name="bytes"/> of the budget; false (and nothing taken) when that would pass the bound.</summary>
    public bool TryTake(long bytes)
    {
        if (Interlocked.Add(ref used, bytes) <= options.Value.MaxSpoolBytes)
        {
            return true;
        }
        Interlocked.Add(ref used, -bytes);
        return false;
    }

    public void Give(long bytes) => Interlocked.Add(ref used, -bytes);
}
