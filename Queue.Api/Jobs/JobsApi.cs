using System.Globalization;
using System.Security.Claims;
using System.Text.Json;
using System.Text.Json.Serialization.Metadata;
using Microsoft.AspNetCore.Http.HttpResults;
using Microsoft.AspNetCore.Http.Json;
using FromQueryAttribute = Microsoft.AspNetCore.Mvc.FromQueryAttribute;
using Microsoft.AspNetCore.RateLimiting;
using Microsoft.Extensions.Options;
using Microsoft.Net.Http.Headers;
using Queue.Api.Infrastructure;
using Queue.Core.Data;
using Queue.Core.Jobs;

namespace Queue.Api.Jobs;

/// <summary>The customer endpoints of docs/CONTRACT.md: jobs, documents, status, cancel. Every lookup is scoped to the caller's tenant.</summary>
public static class JobsApi
{
    public static IServiceCollection AddJobsApi(this IServiceCollection services)
    {
        services.ConfigureHttpJsonOptions(o => o.SerializerOptions.TypeInfoResolverChain.Insert(0, JobsJsonContext.Default));
        services.Configure<RateLimiterOptions>(o => o.AddPolicy<string, TenantRateLimitPolicy>(TenantRateLimitPolicy.Name));
        services.AddSingleton<IdempotencyFilter>();
        return services;
    }

    public static IEndpointRouteBuilder MapJobsApi(this IEndpointRouteBuilder app)
    {
        var jobs = app.MapGroup("/jobs").RequireAuthorization(Roles.Customer).RequireRateLimiting(TenantRateLimitPolicy.Name)
            .WithTags("Jobs").ProducesProblem(401).ProducesProblem(403).ProducesProblem(429);
        jobs.MapPost("", CreateJobEndpoint.HandleAsync).WithIdempotency()
            .Accepts<CreateJobRequest>("application/json").ProducesProblem(409).ProducesProblem(413).ProducesProblem(415).ProducesProblem(422)
            .WithSummary("Create a job, optionally with inline base64 documents").WithName("CreateJob")
            .DisableRequestTimeout(); // a 64 MiB body may take a while; its database wait is bounded by Jobs:DatabaseWaitMilliseconds
        jobs.MapGet("", ListAsync).WithSummary("The caller's jobs, newest first").WithName("ListJobs");
        jobs.MapGet("/{id:long}", GetAsync).WithSummary("Job status: counts, position, ordering, ETA").WithName("GetJob");
        jobs.MapDelete("/{id:long}", CancelAsync).WithSummary("Cancel a job").WithName("CancelJob");
        jobs.MapPost("/{id:long}/close", CloseAsync).WithSummary("No more documents will come").WithName("CloseJob");
        jobs.MapPost("/{id:long}/documents", UploadAsync).WithIdempotency()
            .Accepts<Stream>("application/octet-stream", "multipart/form-data", "*/*").ProducesProblem(413).ProducesProblem(422)
            .WithSummary("Add documents to an open job: a raw body with ?name=, or multipart/form-data").WithName("UploadDocuments")
            .DisableRequestTimeout(); // streamed: bounded by Kestrel's minimum data rate
        jobs.MapGet("/{id:long}/documents", DocumentsAsync).WithSummary("The job's documents, in id order").WithName("ListDocuments");
        jobs.MapGet("/{id:long}/documents/{documentId:long}", DownloadAsync)
            .Produces(200, contentType: "application/octet-stream").ProducesProblem(404)
            .WithSummary("A document's original bytes").WithName("GetDocument")
            .DisableRequestTimeout(); // streamed to a client of any speed
        jobs.MapGet("/{id:long}/items", ItemsAsync).WithSummary("The job's items with their last errors, in id order").WithName("ListItems");
        return app;
    }

    /// <summary>
    /// The idempotency filter, the singleton from DI. Not AddEndpointFilter&lt;T&gt;: its factory is built with
    /// System.Linq.Expressions, at start-up (README "Memory").
    /// </summary>
    private static RouteHandlerBuilder WithIdempotency(this RouteHandlerBuilder endpoint) =>
        endpoint.AddEndpointFilter((invocation, next) =>
            invocation.HttpContext.RequestServices.GetRequiredService<IdempotencyFilter>().InvokeAsync(invocation, next));

    private static async Task<Results<JsonCreated<UploadResponse>, ValidationProblem, ProblemHttpResult>> UploadAsync(
        long id, HttpContext http, ClaimsPrincipal user, [FromQuery] string? name, JobService jobs, JobStatusService status,
        IOptions<ApiLimitsOptions> limits, CancellationToken ct)
    {
        var idempotency = http.Features.Get<IIdempotencyFeature>();
        if (idempotency?.LandedDocuments is { } landed)
        {
            return await LandedUploadAsync(user.TenantId(), id, landed, status);
        }
        var body = RequestLimit.Body(http, limits.Value.MaxRequestBytes);
        IAsyncEnumerable<IncomingDocument> documents;
        var contentType = http.Request.ContentType;
        if (contentType is not null && MediaTypeHeaderValue.TryParse(contentType, out var media)
            && media.MediaType.Equals("multipart/form-data", StringComparison.OrdinalIgnoreCase))
        {
            var boundary = HeaderUtilities.RemoveQuotes(media.Boundary).Value;
            if (string.IsNullOrEmpty(boundary) || boundary.Length > 200)
            {
                return Problems.Validation("Content-Type", "multipart/form-data needs a boundary of 1 to 200 characters");
            }
            documents = UploadBodies.Multipart(body, boundary, ct);
        }
        else
        {
            // One document: a declared length over its limit is refused before a byte of the body is read.
            if (http.Request.ContentLength > limits.Value.MaxDocumentBytes)
            {
                throw new PayloadTooLargeException($"the document is over the limit of {limits.Value.MaxDocumentBytes} bytes");
            }
            var type = contentType ?? "application/octet-stream";
            var errors = JobValidation.Document(name, type, "name", "Content-Type");
            if (errors.Count > 0)
            {
                return Problems.Validation(errors);
            }
            documents = UploadBodies.One(new IncomingDocument(name!, type, body));
        }
        (Outcome Outcome, UploadResult? Result) written;
        try
        {
            written = await jobs.UploadAsync(user.TenantId(), id, documents, limits.Value.MaxDocumentBytes, idempotency?.Run, ct);
        }
        catch (WriteStillRunningException running)
        {
            idempotency?.Landing(CreateJobEndpoint.UploadAnswerAsync(id, running.LandingOf<(Outcome, UploadResult?)>()));
            throw;
        }
        var (outcome, result) = written;
        if (outcome != Outcome.Ok)
        {
            return outcome == Outcome.NotFound
                ? Problems.NotFound($"job {id}")
                : Problems.Conflict($"job {id} is closed or cancelled and takes no more documents");
        }
        var location = string.Create(CultureInfo.InvariantCulture, $"/jobs/{id}/documents/{result!.Documents[0].Id}");
        var response = new UploadResponse(result.Documents, result.ItemsAdded);
        idempotency?.Committed(StatusCodes.Status201Created, location, response);
        return new JsonCreated<UploadResponse>(location, response);
    }

    /// <summary>
    /// A retry of a keyed upload whose documents committed and whose request never answered: those documents (one
    /// upload's are consecutive among its job's, uploads holding the job's row lock), as the upload would have answered.
    /// </summary>
    private static async Task<Results<JsonCreated<UploadResponse>, ValidationProblem, ProblemHttpResult>> LandedUploadAsync(
        long tenant, long jobId, (long First, int Count) landed, JobStatusService status)
    {
        var job = await status.GetAsync(tenant, jobId, CancellationToken.None);
        if (job is null)
        {
            return Problems.NotFound($"job {jobId}");
        }
        var documents = await status.CreatedDocumentsAsync(jobId, landed.First, landed.Count, CancellationToken.None);
        var location = string.Create(CultureInfo.InvariantCulture, $"/jobs/{jobId}/documents/{landed.First}");
        return new JsonCreated<UploadResponse>(location, new UploadResponse(documents, (long)documents.Count * job.Tasks.Count));
    }

    private static async Task<Results<Ok<JobStatus>, ProblemHttpResult>> GetAsync(long id, ClaimsPrincipal user, JobStatusService status, CancellationToken ct) =>
        await status.GetAsync(user.TenantId(), id, ct) is { } s ? TypedResults.Ok(s) : Problems.NotFound($"job {id}");

    private static async Task<Results<Ok<JobStatus>, ProblemHttpResult>> CloseAsync(
        long id, ClaimsPrincipal user, JobService jobs, JobStatusService status, CancellationToken ct)
    {
        var tenant = user.TenantId();
        return await jobs.CloseAsync(tenant, id, ct) switch
        {
            Outcome.NotFound => Problems.NotFound($"job {id}"),
            Outcome.Conflict => Problems.Conflict($"job {id} is cancelled"),
            _ => await status.GetAsync(tenant, id, ct) is { } s ? TypedResults.Ok(s) : Problems.NotFound($"job {id}"),
        };
    }

    private static async Task<Results<Ok<JobStatus>, ProblemHttpResult>> CancelAsync(
        long id, ClaimsPrincipal user, JobService jobs, JobStatusService status, CancellationToken ct)
    {
        var tenant = user.TenantId();
        return await jobs.CancelAsync(tenant, id, ct) == Outcome.NotFound
            ? Problems.NotFound($"job {id}")
            : await status.GetAsync(tenant, id, ct) is { } s ? TypedResults.Ok(s) : Problems.NotFound($"job {id}");
    }

    private static async Task<Results<Ok<JobsPage>, ValidationProblem>> ListAsync(
        ClaimsPrincipal user, JobQueries queries, [FromQuery] string? state, [FromQuery] string? limit, [FromQuery] string? after, CancellationToken ct)
    {
        var errors = new Dictionary<string, string[]>();
        var take = Limit(limit, errors);
        int? stateNumber = null;
        if (state is not null && (stateNumber = JobStates.Parse(state)) is null)
        {
            errors["state"] = ["must be open, closed, done or cancelled"];
        }
        if (errors.Count > 0)
        {
            return Problems.Validation(errors);
        }
        var page = await queries.JobsAsync(user.TenantId(), stateNumber, take, after, ct);
        return TypedResults.Ok(new JobsPage(page.Rows, page.Next));
    }

    private static async Task<Results<Ok<DocumentsPage>, ValidationProblem, ProblemHttpResult>> DocumentsAsync(
        long id, ClaimsPrincipal user, JobQueries queries, [FromQuery] string? limit, [FromQuery] string? after, CancellationToken ct)
    {
        var errors = new Dictionary<string, string[]>();
        var take = Limit(limit, errors);
        if (errors.Count > 0)
        {
            return Problems.Validation(errors);
        }
        return await queries.DocumentsAsync(user.TenantId(), id, take, after, ct) is { } page
            ? TypedResults.Ok(new DocumentsPage(page.Rows, page.Next))
            : Problems.NotFound($"job {id}");
    }

    private static async Task<Results<Ok<ItemsPage>, ValidationProblem, ProblemHttpResult>> ItemsAsync(
        long id, ClaimsPrincipal user, JobQueries queries, [FromQuery] string? state, [FromQuery] string? limit, [FromQuery] string? after, CancellationToken ct)
    {
        var errors = new Dictionary<string, string[]>();
        var take = Limit(limit, errors);
        int? stateNumber = null;
        if (state is not null && (stateNumber = ItemStates.Parse(state)) is null)
        {
            errors["state"] = ["must be ready, leased, done, dead or cancelled"];
        }
        if (errors.Count > 0)
        {
            return Problems.Validation(errors);
        }
        return await queries.ItemsAsync(user.TenantId(), id, stateNumber, take, after, ct) is { } page
            ? TypedResults.Ok(new ItemsPage(page.Rows, page.Next))
            : Problems.NotFound($"job {id}");
    }

    private static async Task<IResult> DownloadAsync(long id, long documentId, HttpContext http, ClaimsPrincipal user, JobQueries queries, CancellationToken ct)
    {
        var doc = await queries.DocumentAsync(user.TenantId(), id, documentId, ct);
        if (doc is null)
        {
            return Problems.NotFound($"document {documentId} of job {id}");
        }
        var response = http.Response;
        response.StatusCode = 200;
        response.ContentType = doc.ContentType;
        response.ContentLength = doc.Size;
        response.Headers.ETag = $"\"{doc.Sha256}\"";
        var disposition = new ContentDispositionHeaderValue("attachment");
        disposition.SetHttpFileName(doc.Name);
        response.Headers.ContentDisposition = disposition.ToString();
        await queries.CopyContentAsync(doc.Id, doc.Size, response.Body, ct, fromReplica: true);
        return TypedResults.Empty;
    }

    private static int Limit(string? raw, Dictionary<string, string[]> errors)
    {
        if (raw is null)
        {
            return 50;
        }
        if (int.TryParse(raw, NumberStyles.None, CultureInfo.InvariantCulture, out var n) && n is >= 1 and <= 500)
        {
            return n;
        }
        errors["limit"] = ["must be an integer from 1 to 500"];
        return 0;
    }
}
