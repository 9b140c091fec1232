using System.Globalization;
using System.Security.Claims;
using System.Text.Json;
using System.Text.Json.Serialization.Metadata;
using Microsoft.AspNetCore.Http.HttpResults;
using Microsoft.AspNetCore.Http.Json;
using Microsoft.Extensions.Options;
using MySqlConnector;
using Queue.Api.Infrastructure;
using Queue.Core.Data;
using Queue.Core.Jobs;

namespace Queue.Api.Jobs;

/// <summary>
/// POST /jobs: validation, the grouped write, and the answers an Idempotency-Key keeps, including those of a write
/// that was still running when the request had to answer (docs/DESIGN.md "Writes whose outcome is not known yet").
/// </summary>
internal static class CreateJobEndpoint
{
    public static async Task<Results<JsonCreated<CreatedJobResponse>, ValidationProblem, ProblemHttpResult>> HandleAsync(
        HttpContext http, ClaimsPrincipal user, JobService jobs, JobStatusService status, IOptions<ApiLimitsOptions> limits,
        IOptions<JobOptions> jobOptions, IOptions<JsonOptions> json, CancellationToken ct)
    {
        if (!http.Request.HasJsonContentType())
        {
            return UnsupportedMediaType("send the job as application/json");
        }
        var typeInfo = (JsonTypeInfo<CreateJobRequest>)json.Value.SerializerOptions.GetTypeInfo(typeof(CreateJobRequest));
        var body = RequestLimit.Body(http, limits.Value.MaxRequestBytes);
        var request = await JsonSerializer.DeserializeAsync(body, typeInfo, ct);
        if (request is null)
        {
            return Problems.Validation("$", "send a JSON object");
        }
        var documents = request.Documents ?? [];
        var (errors, tooLarge) = JobValidation.NewJob(request.Name, request.Tasks, documents.Select(Fields).ToList(),
            jobOptions.Value.MaxInlineDocuments, limits.Value.MaxDocumentBytes);
        if (errors.Count > 0)
        {
            return Problems.Validation(errors);
        }
        if (tooLarge is not null)
        {
            return TypedResults.Problem(statusCode: 413, title: "Payload Too Large",
                detail: $"documents[{tooLarge}] is over the limit of {limits.Value.MaxDocumentBytes} bytes");
        }
        var tenant = user.TenantId();
        var idempotency = http.Features.Get<IIdempotencyFeature>();
        if (idempotency?.LandedJob is { } landed)
        {
            return await LandedAnswerAsync(tenant, landed, status, jobOptions.Value.MaxInlineDocuments);
        }
        var inline = documents.Select(d => new InlineDocument(d.Name!, d.ContentType ?? "application/octet-stream", d.Content!)).ToList();
        // Not the request's token: a grouped submission commits whether or not its caller waits, so the caller waits
        // (bounded by Jobs:DatabaseWaitMilliseconds) to learn the outcome its Idempotency-Key must keep.
        (PendingJob Job, CreatedJob Created) made;
        try
        {
            made = await jobs.CreateAsync(tenant, new NewJob(request.Name!, request.Tasks, request.Open ?? false, inline), idempotency?.Run,
                CancellationToken.None);
        }
        catch (WriteStillRunningException running)
        {
            idempotency?.Landing(JobAnswerAsync(running.LandingOf<(PendingJob, CreatedJob)>(), status));
            throw;
        }
        var (pending, created) = made;
        // What a retry gets if the status read below fails: a job status too, with what is unknown left null.
        idempotency?.Committed(StatusCodes.Status201Created, Location(created),
            CreatedJobResponse.From(status.OfNewJobUnread(pending, created), created.Documents));
        var s = await status.OfNewJobAsync(pending, created, CancellationToken.None);
        return new JsonCreated<CreatedJobResponse>(Location(created), CreatedJobResponse.From(s, created.Documents));
    }

    /// <summary>
    /// A retry of a keyed request whose job committed and whose answer was never stored (its process killed, its COMMIT's
    /// answer lost): the job as it is now, with its documents (as many as a request may carry inline), the answer the
    /// filter then keeps. Before, the key answered 409 for ten minutes and then made the job a second time.
    /// </summary>
    private static async Task<JsonCreated<CreatedJobResponse>> LandedAnswerAsync(long tenant, long jobId, JobStatusService status, int maxDocuments)
    {
        var s = await status.GetAsync(tenant, jobId, CancellationToken.None)
            ?? throw new InvalidOperationException($"job {jobId} of an Idempotency-Key record is gone");
        var documents = await status.CreatedDocumentsAsync(jobId, 0, maxDocuments, CancellationToken.None);
        return new JsonCreated<CreatedJobResponse>(string.Create(CultureInfo.InvariantCulture, $"/jobs/{jobId}"), CreatedJobResponse.From(s, documents));
    }

    private static InlineDocumentFields? Fields(InlineDocumentRequest? d) =>
        d is null ? null : new(d.Name, d.ContentType, d.Content?.Length, !ReferenceEquals(d.Content, Base64ContentConverter.Invalid));

    private static string Location(CreatedJob created) => string.Create(CultureInfo.InvariantCulture, $"/jobs/{created.JobId}");

    /// <summary>The answer a retry gets once a job that was still being written when its request had to answer has landed.</summary>
    private static async Task<CommittedAnswer?> JobAnswerAsync(Task<(PendingJob, CreatedJob)> landing, JobStatusService status)
    {
        var (pending, created) = await landing;
        JobStatus s;
        try
        {
            s = await status.OfNewJobAsync(pending, created, CancellationToken.None);
        }
        catch (Exception ex) when (ex is MySqlException or IOException or InvalidOperationException)
        {
            s = status.OfNewJobUnread(pending, created);
        }
        return new(StatusCodes.Status201Created, Location(created), CreatedJobResponse.From(s, created.Documents));
    }

    /// <summary>The same for a small upload: null when it did not land (its job was closed meanwhile), so the key is freed.</summary>
    public static async Task<CommittedAnswer?> UploadAnswerAsync(long jobId, Task<(Outcome Outcome, UploadResult? Result)> landing)
    {
        var (outcome, result) = await landing;
        return outcome != Outcome.Ok || result is null
            ? null
            : new(StatusCodes.Status201Created, string.Create(CultureInfo.InvariantCulture, $"/jobs/{jobId}/documents/{result.Documents[0].Id}"),
                new UploadResponse(result.Documents, result.ItemsAdded));
    }

    private static ProblemHttpResult UnsupportedMediaType(string detail) =>
        TypedResults.Problem(statusCode: 415, title: "Unsupported Media Type", detail: detail);
}
