using System.Buffers.Binary;
using System.Diagnostics;
using System.Diagnostics.Metrics;
using System.Security.Cryptography;
using System.Text;
using Queue.Core.Claims;

namespace Queue.Core.Telemetry;

/// <summary>
/// The traces of a job's life: submit, each claim, complete or fail of its items, all in one trace per job, and the
/// ordering rewrite in traces of its own. No id is stored: a job's trace id and the span id its spans hang under are
/// derived from the job id (<see cref="JobContext"/>), so every process that touches the job, at any time, puts its
/// spans in the same trace. The spans of a job are siblings under that derived parent, which is never exported
/// itself: an Activity's own span id cannot be chosen, so no real span can be the root that later spans name.
/// Every method first asks <see cref="ActivitySource.HasListeners"/>: with nobody listening (no exporter configured)
/// a call costs that check and builds no tag, list or Activity. See docs/DESIGN.md "Tracing and metrics".
/// </summary>
public static class QueueTracing
{
    /// <summary>The name of the <see cref="ActivitySource"/> and of the <see cref="Meter"/>.</summary>
    public const string Name = "Queue";

    public const string JobId = "queue.job_id";
    public const string ItemId = "queue.item_id";
    public const string TenantId = "queue.tenant_id";
    public const string Task = "queue.task";
    public const string Attempt = "queue.attempt";
    public const string Worker = "queue.worker";
    public const string Items = "queue.items";
    public const string Instance = "queue.instance";

    public const string Submit = "queue.submit";
    public const string Claim = "queue.claim";
    public const string Complete = "queue.complete";
    public const string Fail = "queue.fail";
    public const string Rewrite = "queue.rewrite";

    public static readonly ActivitySource Source = new(Name);

    /// <summary>The instruments that mirror /metrics (ApiMeters, SchedulerMeters): read only when a collector collects.</summary>
    public static readonly Meter Meter = new(Name);

    private static ulong salt;

    /// <summary>
    /// Mixed into every derived trace id. Job ids are per database, so two deployments exporting to one collector would
    /// put their job 42s in one trace; each sets its own <c>Telemetry:TraceSalt</c>. Set once at start-up.
    /// </summary>
    public static void UseSalt(string? text)
    {
        var value = string.IsNullOrEmpty(text) ? 0 : BinaryPrimitives.ReadUInt64LittleEndian(SHA256.HashData(Encoding.UTF8.GetBytes(text)));
        Volatile.Write(ref salt, value);
    }

    /// <summary>
    /// The parent every span of <paramref name="jobId"/> is created under: a trace id and a span id mixed from the job
    /// id (SplitMix64), so they look random to samplers that read the trace id's bits (TraceIdRatioBased), and sampled.
    /// </summary>
    public static ActivityContext JobContext(long jobId)
    {
        var s = Volatile.Read(ref salt);
        Span<byte> trace = stackalloc byte[16];
        BinaryPrimitives.WriteUInt64BigEndian(trace, Mix((ulong)jobId ^ s));
        BinaryPrimitives.WriteUInt64BigEndian(trace[8..], Mix(((ulong)jobId ^ s) + 0x5851F42D4C957F2DUL) | 1);
        Span<byte> span = stackalloc byte[8];
        BinaryPrimitives.WriteUInt64BigEndian(span, Mix(((ulong)jobId ^ s) + 0x14057B7EF767814FUL) | 1);
        return new ActivityContext(ActivityTraceId.CreateFromBytes(trace), ActivitySpanId.CreateFromBytes(span), ActivityTraceFlags.Recorded, isRemote: true);
    }

    /// <summary>When a traced operation began, or null when nobody listens: the spans are made after the fact, once the ids are known.</summary>
    public static DateTimeOffset? Begin() => Source.HasListeners() ? DateTimeOffset.UtcNow : null;

    /// <summary>A job was created; <paramref name="items"/> is what its documents and tasks made.</summary>
    public static void Submitted(DateTimeOffset? began, long jobId, long tenantId, int documents, int items)
    {
        if (began is null || !Source.HasListeners())
        {
            return;
        }
        using var a = Start(Submit, ActivityKind.Producer, jobId, began.Value, linkCurrent: true);
        if (a is null)
        {
            return;
        }
        a.SetTag(JobId, jobId);
        a.SetTag(TenantId, tenantId);
        a.SetTag("queue.documents", documents);
        a.SetTag(Items, items);
    }

    /// <summary>Items handed to one caller of /next: one span per item, each in its own job's trace.</summary>
    public static void Claimed(DateTimeOffset? began, IReadOnlyList<TakenItem> items, string? worker)
    {
        if (began is null || items.Count == 0 || !Source.HasListeners())
        {
            return;
        }
        foreach (var item in items)
        {
            using var a = Start(Claim, ActivityKind.Consumer, item.JobId, began.Value, linkCurrent: true);
            if (a is null)
            {
                continue;
            }
            Tag(a, item.JobId, item.Id, item.TenantId, item.Task, item.Attempt);
            a.SetTag(Worker, worker);
            a.SetTag(Items, items.Count);
        }
    }

    /// <summary>A completion written by a (grouped) transaction that began at <paramref name="began"/>.</summary>
    public static void Completed(DateTimeOffset began, long itemId, long jobId, long tenantId, string task, int attempt, string? worker, int batch)
    {
        using var a = Start(Complete, ActivityKind.Internal, jobId, began, linkCurrent: false);
        if (a is null)
        {
            return;
        }
        Tag(a, jobId, itemId, tenantId, task, attempt);
        a.SetTag(Worker, worker);
        a.SetTag("queue.batch", batch);
    }

    /// <summary>A failed attempt: retried later, or the item is dead (<paramref name="dead"/>).</summary>
    public static void Failed(DateTimeOffset? began, long itemId, long jobId, long tenantId, string task, int attempt, bool dead, string error)
    {
        if (began is null || !Source.HasListeners())
        {
            return;
        }
        using var a = Start(Fail, ActivityKind.Internal, jobId, began.Value, linkCurrent: true);
        if (a is null)
        {
            return;
        }
        Tag(a, jobId, itemId, tenantId, task, attempt);
        a.SetTag("queue.dead", dead);
        // The worker's failure, not this service's: the span itself went well, so its status says only what became of the item.
        a.SetStatus(dead ? ActivityStatusCode.Error : ActivityStatusCode.Unset, dead ? error : null);
    }

    private static Activity? Start(string name, ActivityKind kind, long jobId, DateTimeOffset began, bool linkCurrent)
    {
        // The request that did it (ASP.NET Core's span, when that instrumentation is on) is in a trace of its own: linked, not the parent.
        var current = linkCurrent ? Activity.Current : null;
        ActivityLink[]? links = current is null ? null : [new ActivityLink(current.Context)];
        return Source.StartActivity(name, kind, JobContext(jobId), tags: null, links, began);
    }

    private static void Tag(Activity a, long jobId, long itemId, long tenantId, string task, int attempt)
    {
        a.SetTag(JobId, jobId);
        a.SetTag(ItemId, itemId);
        a.SetTag(TenantId, tenantId);
        a.SetTag(Task, task);
        a.SetTag(Attempt, attempt);
    }

    private static ulong Mix(ulong z)
    {
        z += 0x9E3779B97F4A7C15UL;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;
        return z ^ (z >> 31);
    }
}
