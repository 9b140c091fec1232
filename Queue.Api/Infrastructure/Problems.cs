using System.Text.Json;
using Microsoft.AspNetCore.Diagnostics;
using Microsoft.AspNetCore.Http.HttpResults;
using MySqlConnector;
using Queue.Core;
using Queue.Core.Data;
using Queue.Core.Jobs;

namespace Queue.Api.Infrastructure;

/// <summary>Every error, from any layer, leaves as an RFC 9457 ProblemDetails body, and never with a stack trace.</summary>
public static partial class Problems
{
    public static IServiceCollection AddApiProblems(this IServiceCollection services)
    {
        services.AddProblemDetails(o => o.CustomizeProblemDetails = c =>
        {
            c.ProblemDetails.Extensions.Remove("exception");
            c.ProblemDetails.Extensions.Remove("traceId");
            // docs/CONTRACT.md: every error carries detail, bodiless statuses from routing and field errors included.
            c.ProblemDetails.Detail ??= c.ProblemDetails is HttpValidationProblemDetails { Errors.Count: > 0 } v
                ? ValidationDetail(v.Errors)
                : DefaultDetail(c.ProblemDetails.Status ?? c.HttpContext.Response.StatusCode);
        });
        // Body binding errors (malformed JSON, unknown members) reach QueueExceptionHandler, which names the field,
        // instead of leaving as a bare 400.
        services.Configure<RouteHandlerOptions>(o => o.ThrowOnBadRequest = true);
        services.AddExceptionHandler<QueueExceptionHandler>();
        return services;
    }

    public static WebApplication UseApiProblems(this WebApplication app)
    {
        app.UseExceptionHandler();
        // 404, 405, 415 and other bodiless statuses from routing get a ProblemDetails body too.
        app.UseStatusCodePages();
        return app;
    }

    private const string ValidationTitle = "The request is invalid.";

    public static ValidationProblem Validation(string field, string message) =>
        Validation(new Dictionary<string, string[]> { [field] = [message] });

    public static ValidationProblem Validation(IDictionary<string, string[]> errors) =>
        TypedResults.ValidationProblem(errors, detail: ValidationDetail(errors), title: ValidationTitle);

    /// <summary>docs/CONTRACT.md "Conventions": one sentence naming the first bad field and what is wrong with it.</summary>
    public static string ValidationDetail(IEnumerable<KeyValuePair<string, string[]>> errors)
    {
        var (field, messages) = errors.First();
        var message = messages.FirstOrDefault() ?? "is invalid";
        var sentence = message.Contains($"'{field}'", StringComparison.Ordinal) ? message
            : message.Length > 0 && char.IsLower(message[0]) ? $"'{field}' {message}"
            : $"'{field}': {message}";
        return sentence.TrimEnd('.') + ".";
    }

    private static string DefaultDetail(int status) => status switch
    {
        400 => "the request is malformed",
        401 => "send a valid API key as 'Authorization: Bearer <key>'",
        403 => "this key's role may not use this route",
        404 => "nothing exists at this path",
        405 => "this path does not accept that method",
        413 => "the request body is over the limit",
        415 => "this route does not accept that Content-Type",
        429 => "the rate limit was reached; retry after the Retry-After delay",
        503 => "the service is at capacity or the database is unavailable; retry later",
        >= 500 => "an unexpected error occurred; it was logged",
        _ => "the request failed",
    };

    public static ProblemHttpResult NotFound(string what) =>
        TypedResults.Problem(statusCode: 404, title: "Not Found", detail: $"{what} does not exist");

    public static ProblemHttpResult Conflict(string detail) =>
        TypedResults.Problem(statusCode: 409, title: "Conflict", detail: detail);

    internal sealed partial class QueueExceptionHandler(IProblemDetailsService problems, ILogger<QueueExceptionHandler> logger) : IExceptionHandler
    {
        public async ValueTask<bool> TryHandleAsync(HttpContext http, Exception exception, CancellationToken ct)
        {
            var (status, title, detail, errors) = exception switch
            {
                ValidationException v => (400, ValidationTitle, ValidationDetail(v.Errors), v.Errors),
                PayloadTooLargeException p => (413, "Payload Too Large", p.Message, null),
                BadHttpRequestException { StatusCode: 413 } => (413, "Payload Too Large", "the request body is over the limit", null),
                BadHttpRequestException b when b.InnerException is JsonException j => (400, "Malformed JSON", ValidationDetail(JsonErrors(j)), JsonErrors(j)),
                BadHttpRequestException b => (b.StatusCode, "Bad Request", b.Message, null),
                JsonException j => (400, "Malformed JSON", ValidationDetail(JsonErrors(j)), JsonErrors(j)),
                Core.Data.ServiceBusyException busy => (503, "Service Unavailable", busy.Message + "; retry later", null),
                // A deadlock or lock wait that outlived its retries rolled everything back: safe to retry.
                MySqlException m when Retry.IsTransient(m) => (503, "Service Unavailable", "the database is busy; nothing was changed, retry later", null),
                MySqlException m when m.ErrorCode is MySqlErrorCode.RecordFileFull or MySqlErrorCode.DiskFull =>
                    (507, "Insufficient Storage", "the database is out of disk space; nothing was stored, retry later", null),
                MySqlException m when IsUnavailable(m) => (503, "Service Unavailable", "the database is unavailable or overloaded; retry later", null),
                // The driver's socket to the database broke outside a MySqlException (a reset mid-read): the same as above.
                IOException or System.Net.Sockets.SocketException when exception is not Microsoft.AspNetCore.Connections.ConnectionResetException
                    && !http.RequestAborted.IsCancellationRequested =>
                    (503, "Service Unavailable", "the connection to the database broke; the change may or may not have been made, retry later", null),
                OperationCanceledException when http.RequestAborted.IsCancellationRequested => (499, "Client Closed Request", "the client went away", null),
                _ => (500, "Internal Server Error", "an unexpected error occurred; it was logged", (IDictionary<string, string[]>?)null),
            };
            if (status >= 500)
            {
                LogUnhandled(logger, exception, http.Request.Method, http.Request.Path);
            }
            if (status is 503 or 507)
            {
                http.Response.Headers.RetryAfter = "1";
            }
            if (http.Response.HasStarted)
            {
                return true;
            }
            http.Response.StatusCode = status;
            var pd = new Microsoft.AspNetCore.Mvc.ProblemDetails { Status = status, Title = title, Detail = detail };
            if (errors is not null)
            {
                pd.Extensions["errors"] = errors;
            }
            return await problems.TryWriteAsync(new ProblemDetailsContext { HttpContext = http, ProblemDetails = pd, Exception = exception });
        }

        /// <summary>
        /// The database could not be reached, or the connection broke mid-call (the server died, a network reset): the
        /// caller's change may or may not have committed, which is what a 503 says (retry with the same Idempotency-Key).
        /// </summary>
        private static bool IsUnavailable(MySqlException m) =>
            m.IsTransient
            || m.ErrorCode is MySqlErrorCode.UnableToConnectToHost or MySqlErrorCode.TooManyUserConnections or MySqlErrorCode.ConnectionCountError
            || m.Message.Contains("Connect Timeout expired", StringComparison.Ordinal)
            || m.InnerException is IOException or System.Net.Sockets.SocketException;

        private static string JsonDetail(JsonException j) => j.Message.Split(" Path:")[0];

        private static Dictionary<string, string[]> JsonErrors(JsonException j)
        {
            // "$.documents[0].content" names the field as a client wrote it: "documents[0].content".
            var path = string.IsNullOrEmpty(j.Path) ? "$" : j.Path.StartsWith("$.", StringComparison.Ordinal) ? j.Path[2..] : j.Path;
            // Unknown members are reported by name so a customer sees exactly which property to remove.
            var message = j.Message;
            var marker = "could not be mapped to any .NET member contained in type";
            if (message.Contains(marker, StringComparison.Ordinal))
            {
                var start = message.IndexOf('\'', StringComparison.Ordinal);
                var end = start >= 0 ? message.IndexOf('\'', start + 1) : -1;
                if (end > start)
                {
                    var name = message[(start + 1)..end];
                    return new Dictionary<string, string[]> { [name] = [$"'{name}' is not a known property"] };
                }
            }
            return new Dictionary<string, string[]> { [path] = [JsonDetail(j)] };
        }

        [LoggerMessage(EventId = 1001, Level = LogLevel.Error, Message = "An unhandled error answered {Method} {Path} with 500")]
        private static partial void LogUnhandled(ILogger logger, Exception exception, string method, string path);
    }
}
