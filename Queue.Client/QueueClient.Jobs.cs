using System.Globalization;
using System.Net.Http.Headers;

namespace Queue.Client;

/// <summary>Customer endpoints: submit, upload, close, status, list, cancel, documents, items, explain.</summary>
public sealed partial class QueueClient
{
    /// <summary>POST /jobs. Without a key one is made up, so this call's own retries still never duplicate the job.</summary>
    public Task<CreatedJob> CreateJobAsync(NewJob job, string? idempotencyKey = null, CancellationToken ct = default)
    {
        var key = idempotencyKey ?? NewKey();
        var body = new CreateJobBody(job.Name, job.Tasks, job.Open,
            job.Documents?.Select(d => new InlineDocumentBody(d.Name, d.ContentType, Convert.ToBase64String(d.Content))).ToList());
        return ReadAsync(() => Request(HttpMethod.Post, "jobs", Json(body, QueueJsonContext.Default.CreateJobBody), key),
            QueueJsonContext.Default.CreatedJob, ct);
    }

    /// <summary>
    /// POST /jobs/{id}/documents with a raw body, streamed from <paramref name="open"/> (called again on each retry, so
    /// give a fresh stream each time). The key defaults to a new one; pass a deterministic one to resume across runs.
    /// </summary>
    public Task<UploadResult> UploadAsync(long jobId, string name, Func<Stream> open, string contentType = "application/octet-stream",
        string? idempotencyKey = null, CancellationToken ct = default)
    {
        var key = idempotencyKey ?? NewKey();
        var path = $"jobs/{Id(jobId)}/documents?name={Uri.EscapeDataString(name)}";
        return ReadAsync(() =>
        {
            var content = new StreamContent(open(), 81920);
            content.Headers.ContentType = MediaTypeHeaderValue.Parse(contentType);
            return Request(HttpMethod.Post, path, content, key);
        }, QueueJsonContext.Default.UploadResult, ct);
    }

    /// <summary>Uploads a file, streamed from disk.</summary>
    public Task<UploadResult> UploadFileAsync(long jobId, string name, string filePath, string contentType = "application/octet-stream",
        string? idempotencyKey = null, CancellationToken ct = default) =>
        UploadAsync(jobId, name, () => new FileStream(filePath, FileMode.Open, FileAccess.Read, FileShare.Read, 1, FileOptions.Asynchronous | FileOptions.SequentialScan),
            contentType, idempotencyKey, ct);

    public Task<JobStatus> CloseJobAsync(long jobId, CancellationToken ct = default) =>
        ReadAsync(() => Request(HttpMethod.Post, $"jobs/{Id(jobId)}/close"), QueueJsonContext.Default.JobStatus, ct);

    public Task<JobStatus> GetJobAsync(long jobId, CancellationToken ct = default) =>
        ReadAsync(() => Request(HttpMethod.Get, $"jobs/{Id(jobId)}"), QueueJsonContext.Default.JobStatus, ct);

    public Task<JobStatus> CancelJobAsync(long jobId, CancellationToken ct = default) =>
        ReadAsync(() => Request(HttpMethod.Delete, $"jobs/{Id(jobId)}"), QueueJsonContext.Default.JobStatus, ct);

    public Task<JobExplanation> ExplainJobAsync(long jobId, CancellationToken ct = default) =>
        ReadAsync(() => Request(HttpMethod.Get, $"jobs/{Id(jobId)}/explain"), QueueJsonContext.Default.JobExplanation, ct);

    /// <summary>One page of the caller's jobs, newest first; pass <see cref="JobsPage.Next"/> as <paramref name="after"/>.</summary>
    public Task<JobsPage> ListJobsAsync(string? state = null, int? limit = null, string? after = null, CancellationToken ct = default) =>
        ReadAsync(() => Request(HttpMethod.Get, "jobs" + Query(("state", state), ("limit", limit?.ToString(CultureInfo.InvariantCulture)), ("after", after))),
            QueueJsonContext.Default.JobsPage, ct);

    public Task<DocumentsPage> ListDocumentsAsync(long jobId, int? limit = null, string? after = null, CancellationToken ct = default) =>
        ReadAsync(() => Request(HttpMethod.Get, $"jobs/{Id(jobId)}/documents" + Query(("limit", limit?.ToString(CultureInfo.InvariantCulture)), ("after", after))),
            QueueJsonContext.Default.DocumentsPage, ct);

    public Task<ItemsPage> ListItemsAsync(long jobId, string? state = null, int? limit = null, string? after = null, CancellationToken ct = default) =>
        ReadAsync(() => Request(HttpMethod.Get, $"jobs/{Id(jobId)}/items" + Query(("state", state), ("limit", limit?.ToString(CultureInfo.InvariantCulture)), ("after", after))),
            QueueJsonContext.Default.ItemsPage, ct);

    /// <summary>Every document of a job, page after page.</summary>
    public async IAsyncEnumerable<DocumentInfo> AllDocumentsAsync(long jobId, [System.Runtime.CompilerServices.EnumeratorCancellation] CancellationToken ct = default)
    {
        string? after = null;
        do
        {
            var page = await ListDocumentsAsync(jobId, 500, after, ct);
            foreach (var d in page.Documents)
            {
                yield return d;
            }
            after = page.Next;
        }
        while (after is not null);
    }

    /// <summary>GET /jobs/{id}/documents/{documentId}, streamed: dispose the stream to free the connection.</summary>
    public Task<Stream> DownloadDocumentAsync(long jobId, long documentId, CancellationToken ct = default) =>
        OpenStreamAsync(() => Request(HttpMethod.Get, $"jobs/{Id(jobId)}/documents/{Id(documentId)}"), ct);

    private async Task<Stream> OpenStreamAsync(Func<HttpRequestMessage> build, CancellationToken ct)
    {
        var response = await SendAsync(build, ct, HttpCompletionOption.ResponseHeadersRead);
        try
        {
            await EnsureSuccessAsync(response, ct);
            return await response.Content.ReadAsStreamAsync(ct);
        }
        catch
        {
            response.Dispose();
            throw;
        }
    }

    private static string NewKey() => "qc-" + Guid.NewGuid().ToString("N");

    private static string Id(long id) => id.ToString(CultureInfo.InvariantCulture);

    private static string Query(params (string Name, string? Value)[] pairs)
    {
        var parts = pairs.Where(p => p.Value is not null).Select(p => $"{p.Name}={Uri.EscapeDataString(p.Value!)}").ToList();
        return parts.Count == 0 ? "" : "?" + string.Join('&', parts);
    }
}
